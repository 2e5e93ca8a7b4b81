#!/bin/sh
# Regenerates example-app/shopv1 (and shopv1/shopv1connect) from
# example-app/proto/shop/v1/shop.proto. Needs protoc (3.21+),
# protoc-gen-go and protoc-gen-go-grpc on PATH (see interceptor/gen.sh for
# the versions) and protoc-gen-connect-go, the version of connect in go.mod:
#
#   go install connectrpc.com/connect/cmd/protoc-gen-connect-go@v1.21.1
#
# The generated code is committed, so `go run ./example-app` needs none of
# them.
#
# Run from anywhere: sh example-app/gen.sh (or go generate ./example-app).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
protoc -I proto -I example-app/proto \
	--go_out=. --go_opt=module=github.com/locktag/locktag \
	--go-grpc_out=. --go-grpc_opt=module=github.com/locktag/locktag \
	--connect-go_out=. --connect-go_opt=module=github.com/locktag/locktag \
	example-app/proto/shop/v1/shop.proto
