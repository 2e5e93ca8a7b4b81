module github.com/locktag/locktag/interceptor/connectrpc

go 1.26.0

require (
	connectrpc.com/connect v1.19.0
	github.com/locktag/locktag v1.0.0
	github.com/locktag/locktag/interceptor/locktagv1 v1.0.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250528174236-200df99c418a
	google.golang.org/protobuf v1.36.9
)

require (
	github.com/gomodule/redigo v1.9.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
)

replace (
	github.com/locktag/locktag => ../..
	github.com/locktag/locktag/interceptor/locktagv1 => ../locktagv1
)
