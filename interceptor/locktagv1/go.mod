module github.com/locktag/locktag/interceptor/locktagv1

go 1.26.0

require google.golang.org/protobuf v1.21.0
