#!/bin/sh
# Regenerates the Go code for locktag's .proto files. Needs protoc (3.21+),
# protoc-gen-go and protoc-gen-go-grpc on PATH:
#
#   apt-get install -y protobuf-compiler
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
#
# The test service's messages live in a package without gRPC
# (interceptor/internal/rpccore/testpb), so the connect adapter's tests do
# not pull gRPC into its module; its gRPC stubs are generated beside them
# and moved to interceptor/internal/testpbgrpc, in the gRPC module, with the
# message types qualified.
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
	interceptor/internal/rpccore/testpb/test.proto
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
protoc -I proto -I . \
	--go-grpc_out="$tmp" --go-grpc_opt=module=github.com/locktag/locktag \
	interceptor/internal/rpccore/testpb/test.proto
sed -e 's/^package testpb$/package testpbgrpc/' \
	-e 's#^import (#import (\n\ttestpb "github.com/locktag/locktag/interceptor/internal/rpccore/testpb"#' \
	-e 's/\([^A-Za-z0-9_."]\)\(ReserveRequest\|ReserveResponse\|WatchRequest\|WatchResponse\)\b/\1testpb.\2/g' \
	"$tmp/interceptor/internal/rpccore/testpb/test_grpc.pb.go" >interceptor/internal/testpbgrpc/test_grpc.pb.go
gofmt -w interceptor/internal/testpbgrpc/test_grpc.pb.go
