module github.com/locktag/locktag/interceptor/connectrpc

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	github.com/locktag/locktag v0.9.0
	github.com/locktag/locktag/interceptor/internal/rpccore v0.9.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261110000943-09e21b237f2c
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/gomodule/redigo v1.9.3 // indirect
	github.com/locktag/locktag/interceptor/locktagv1 v0.9.0 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
)

replace (
	github.com/locktag/locktag => ../..
	github.com/locktag/locktag/interceptor/internal/rpccore => ../internal/rpccore
	github.com/locktag/locktag/interceptor/locktagv1 => ../locktagv1
)
