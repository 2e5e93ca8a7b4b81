module github.com/locktag/locktag/locker/lockotel

go 1.26.0

require (
	github.com/gomodule/redigo v1.9.2
	github.com/locktag/locktag v1.0.0
	go.opentelemetry.io/otel v1.20.0
	go.opentelemetry.io/otel/metric v1.20.0
	go.opentelemetry.io/otel/trace v1.20.0
)

require (
	github.com/go-logr/logr v1.3.0 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
)

replace github.com/locktag/locktag => ../..
