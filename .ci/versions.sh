#!/usr/bin/env bash
# Tests the library modules alone (GOWORK=off: each module's own go.mod
# decides every version) at one end of the supported range:
#   min      the versions the go.mod files require: the oldest we support
#   latest   every dependency upgraded in a scratch copy to the newest
#            version that resolves on the module proxy (upgrade_module,
#            upgrade.sh: a version the proxy refuses, or that requires one
#            it refuses, is skipped for the next one down, and the output
#            says which and why), built and tested with the next Go release
#   go-next  the go.mod versions with the next Go release
# The next Go release is GO_NEXT (default go1.27.3), fetched as a toolchain;
# when it cannot be fetched, the newest release of the same Go version below
# it that can, and when none can, this machine's Go with a warning
# (pick_toolchain, toolchain.sh).
# Tests run with -short: the 5-master Redlock suites, the 4,000-waiter
# queue test and the drivers' Sentinel failovers and Cluster replica suites
# are left to the full runs (make unit, .ci/valkey.sh).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/toolchain.sh"
. "$(dirname "$0")/upgrade.sh"
mode=${1:?usage: versions.sh min|latest|go-next}
export GOWORK=off
src=$root
case $mode in
min) ;;
latest)
	pick_toolchain "${GO_NEXT:-go1.27.3}" "versions latest"
	src=$(mktemp -d)
	trap 'rm -rf "$src"' EXIT
	(cd "$root" && git ls-files -z | tar --null -cf - -T -) | tar -xf - -C "$src"
	# Every dependency of each module, direct ones first, but our own
	# modules (replaced by their directories here, not on the module
	# proxy). Twice over the list: through those directories, a module
	# upgraded later raises what an earlier one sees. What upgrade_module
	# learns (refused versions, each module's version list) carries from
	# one module to the next.
	start=$SECONDS
	for pass in 1 2; do
		for m in "${modules[@]}"; do
			upgrade_module "$src/$m" "$m (pass $pass)"
		done
	done
	echo "versions latest: upgrades resolved in $((SECONDS - start)) s"
	if [ ${#upgrade_refused[@]} -gt 0 ]; then
		echo "versions latest: skipped (the module proxy refused them or one of their requirements, or go could not resolve them):"
		for v in "${!upgrade_refused[@]}"; do echo "  $v"; done | sort
	fi
	echo "versions latest: upgraded to"
	(cd "$src" && for m in "${modules[@]}"; do (cd "$m" && go list -m all); done | grep -v locktag | sort -u | grep -E 'gin-gonic/gin |labstack/echo/v4 |labstack/echo/v5 |google.golang.org/grpc |connectrpc.com/connect |go-redis/v9 |gomodule/redigo |go.opentelemetry.io/otel |google.golang.org/protobuf ' | sed 's/^/  /')
	;;
go-next)
	pick_toolchain "${GO_NEXT:-go1.27.3}" "versions go-next"
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
