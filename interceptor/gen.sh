#!/bin/sh
# Regenerates the Go code for locktag's .proto files. Needs protoc (3.21+),
# protoc-gen-go and protoc-gen-go-grpc on PATH:
#
#   apt-get install -y protobuf-compiler
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
#
# Run from anywhere: sh interceptor/gen.sh (or go generate ./interceptor).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
protoc -I proto \
	--go_out=. --go_opt=module=github.com/locktag/locktag \
	proto/locktag/v1/options.proto
protoc -I proto -I . \
	--go_out=. --go_opt=module=github.com/locktag/locktag \
	--go-grpc_out=. --go-grpc_opt=module=github.com/locktag/locktag \
	interceptor/internal/testpb/test.proto
