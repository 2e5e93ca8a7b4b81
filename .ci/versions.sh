#!/usr/bin/env bash
# Tests the library modules alone (GOWORK=off: each module's own go.mod
# decides every version) at one end of the supported range:
#   min      the versions the go.mod files require: the oldest we support
#   latest   every dependency upgraded (go get -u) in a scratch copy, built
#            and tested with the next Go release (GO_NEXT, default go1.27.3,
#            fetched as a toolchain)
#   go-next  the go.mod versions with the next Go release
# Tests run with -short: the 5-master Redlock suites, the 4,000-waiter
# queue test and the drivers' Sentinel failovers and Cluster replica suites
# are left to the full runs (make unit, .ci/valkey.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
mode=${1:?usage: versions.sh min|latest|go-next}
export GOWORK=off
src=$root
case $mode in
min) ;;
latest)
	export GOTOOLCHAIN=${GO_NEXT:-go1.27.3}
	src=$(mktemp -d)
	trap 'rm -rf "$src"' EXIT
	(cd "$root" && git ls-files -z | tar --null -cf - -T -) | tar -xf - -C "$src"
	# Twice: a module upgraded later raises what an earlier one sees.
	for m in "${modules[@]}" "${modules[@]}"; do
		# Every direct requirement but our own modules (they are replaced by
		# their directories here and are not on the module proxy), with -u:
		# its dependencies too.
		(cd "$src/$m" &&
			GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 &&
			deps=$(go list -m -f '{{if not (or .Main .Indirect)}}{{.Path}}{{end}}' all | grep -v '^github.com/locktag/' || true) &&
			{ [ -z "$deps" ] || GOFLAGS=-mod=mod go get -u $deps >/dev/null; } &&
			GOFLAGS=-mod=mod go mod tidy >/dev/null)
	done
	echo "versions latest: upgraded to"
	(cd "$src" && for m in "${modules[@]}"; do (cd "$m" && go list -m all); done | grep -v locktag | sort -u | grep -E 'gin-gonic/gin |labstack/echo/v4 |labstack/echo/v5 |google.golang.org/grpc |connectrpc.com/connect |go-redis/v9 |gomodule/redigo |go.opentelemetry.io/otel |google.golang.org/protobuf ' | sed 's/^/  /')
	;;
go-next)
	export GOTOOLCHAIN=${GO_NEXT:-go1.27.3}
	;;
*)
	echo "versions.sh: unknown mode $mode" >&2
	exit 2
	;;
esac
echo "versions $mode: $(cd "$src" && go version)"
for m in "${modules[@]}"; do
	echo "versions $mode: $m"
	(cd "$src/$m" && go vet ./... && go test -short -count=1 -timeout 10m ./...)
done
