module github.com/locktag/locktag/interceptor

go 1.26.0

require (
	github.com/gomodule/redigo v1.9.2
	github.com/locktag/locktag v1.0.0
	github.com/locktag/locktag/interceptor/locktagv1 v1.0.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250528174236-200df99c418a
	google.golang.org/grpc v1.72.0
	google.golang.org/protobuf v1.36.6
)

require (
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/net v0.35.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
	golang.org/x/text v0.22.0 // indirect
)

replace (
	github.com/locktag/locktag => ..
	github.com/locktag/locktag/interceptor/locktagv1 => ./locktagv1
)
