#!/usr/bin/env bash
# Footprint check: one fresh consumer module per transport, outside the tree,
# as a user would write it (require + replace to this checkout, go mod tidy,
# no go.work). Each must build, and its module graph (go list -m all) must
# stay small:
#   net/http + redigo          <= 15 modules in all
#   Gin + redigo               <= Gin's own graph + 8
#   Echo v4 + redigo           <= Echo's own graph + 8 (as Gin's)
#   Echo v5 + redigo           <= Echo v5's own graph + 8 (as Gin's)
#   gRPC + redigo              <= gRPC's own graph + 8
#   connect-go + redigo        <= connect-go's own graph + 10
#   net/http + rueidis         <= rueidis' own graph + 5
#   Fiber v3 + redigo          <= Fiber's own graph + 8 (what Gin's adapter adds)
# The core requires no OpenTelemetry module (the instrumentation is the
# module locker/lockotel, which only its users require). What a gRPC
# consumer adds is our three modules (the core, interceptor and
# locktagv1), redigo, and the test modules redigo's go.mod lists (testify,
# go-spew, go-difflib, yaml.v3): eight (google/uuid, the core's Locker
# instance id, is in gRPC's own graph). A connect consumer adds the same
# eight, google/uuid and genproto's rpc (the status details), which
# connect-go's own graph lacks.
# No library module may require test-only tooling, except the test kit
# locker/locktest, whose embedded server is miniredis: a consumer that
# imports the core and locktest (in its tests) adds only the kit's module
# and miniredis's own graph.
# A net/http consumer on the rueidis driver adds to rueidis' own graph
# (rueidis, x/net, x/sys, x/text and its go.mod's go-cmp, gomega, yaml)
# our three modules (the core, middleware/stdhttp, locker/rueidis), redigo
# (the core's default driver) and google/uuid: five.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
export GOWORK=off GOFLAGS=-mod=mod

forbidden='chromedp|miniredis|go.opentelemetry.io/otel/sdk|go.opentelemetry.io/otel/exporters|go-chi/chi|toxiproxy|zerolog|prometheus|gonum'
fail=0
for m in "${modules[@]}"; do
	# locktest is a test kit: it legitimately requires miniredis (checked below).
	[ "$m" = locker/locktest ] && continue
	if grep -E "^\s*($forbidden)" "$root/$m/go.mod" >/dev/null 2>&1 || grep -E "($forbidden)" "$root/$m/go.mod" | grep -v '^module' >/dev/null; then
		echo "footprint: $m/go.mod requires test-only tooling:" >&2
		grep -E "($forbidden)" "$root/$m/go.mod" >&2
		fail=1
	fi
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# version DIR MODULE: the version of MODULE that the library module in DIR requires.
version() { (cd "$root/$1" && go list -m -f '{{.Version}}' "$2"); }

# consumer NAME IMPORTS...: a consumer module importing IMPORTS; prints its
# module count.
consumer() {
	local name=$1; shift
	local dir="$tmp/$name"
	mkdir -p "$dir"
	{
		echo "package main"
		echo
		echo "import ("
		for p in "$@"; do echo "	_ \"$p\""; done
		echo ")"
		echo
		echo "func main() {}"
	} >"$dir/main.go"
	{
		printf 'module example.com/%s\n\ngo 1.26.0\n\n' "$name"
		echo "replace ("
		for m in "${modules[@]}"; do echo "	$(modpath "$m") => $root/$m"; done
		echo ")"
	} >"$dir/go.mod"
	(cd "$dir" && for p in "$@"; do
		case $p in
		github.com/locktag/*) ;;
		*) go get -d "$p@${pins[$p]:-latest}" >/dev/null 2>&1 || true ;;
		esac
	done && go mod tidy >/dev/null && go build ./... && go list -m all | wc -l)
}

declare -A pins
pins[github.com/gin-gonic/gin]=$(version middleware github.com/gin-gonic/gin)
pins[github.com/labstack/echo/v4]=$(version middleware/lockecho github.com/labstack/echo/v4)
pins[github.com/labstack/echo/v5]=$(version middleware/lockecho5 github.com/labstack/echo/v5)
pins[google.golang.org/grpc]=$(version interceptor google.golang.org/grpc)
pins[connectrpc.com/connect]=$(version interceptor/connectrpc connectrpc.com/connect)
pins[github.com/redis/rueidis]=$(version locker/rueidis github.com/redis/rueidis)
pins[github.com/gofiber/fiber/v3]=$(version middleware/lockfiber github.com/gofiber/fiber/v3)

check() { # check NAME GOT LIMIT
	if [ "$2" -gt "$3" ]; then
		echo "footprint: $1: $2 modules, limit $3" >&2
		fail=1
	else
		echo "footprint: $1: $2 modules (limit $3)"
	fi
}

n=$(consumer nethttp github.com/locktag/locktag/middleware/stdhttp github.com/locktag/locktag/locker/redigo)
check "net/http consumer" "$n" 15
if (cd "$tmp/nethttp" && go list -m all) | grep -E "($forbidden|gin-gonic|google.golang.org/grpc|connectrpc|go-redis)"; then
	echo "footprint: the net/http consumer's graph holds the modules above" >&2
	fail=1
fi
for t in "gin github.com/gin-gonic/gin github.com/locktag/locktag/middleware 8" \
	"echo github.com/labstack/echo/v4 github.com/locktag/locktag/middleware/lockecho 8" \
	"echo5 github.com/labstack/echo/v5 github.com/locktag/locktag/middleware/lockecho5 8" \
	"grpc google.golang.org/grpc github.com/locktag/locktag/interceptor 8" \
	"connect connectrpc.com/connect github.com/locktag/locktag/interceptor/connectrpc 10" \
	"fiber github.com/gofiber/fiber/v3 github.com/locktag/locktag/middleware/lockfiber 8"; do
	set -- $t
	base=$(consumer "$1-alone" "$2")
	n=$(consumer "$1" "$2" "$3" github.com/locktag/locktag/locker/redigo)
	check "$1 consumer (its own graph: $base, +$((n - base)))" "$n" $((base + $4))
done
base=$(consumer rueidis-alone github.com/redis/rueidis)
n=$(consumer nethttp-rueidis github.com/locktag/locktag/middleware/stdhttp github.com/locktag/locktag/locker/rueidis)
check "net/http + rueidis consumer (rueidis' own graph: $base, +$((n - base)))" "$n" $((base + 5))
# The test kit: core + locktest minus core may hold only locktest and
# modules of miniredis's own graph.
pins[github.com/alicebob/miniredis/v2]=$(version locker/locktest github.com/alicebob/miniredis/v2)
core="github.com/locktag/locktag/locker github.com/locktag/locktag/locker/redigo"
consumer core $core >/dev/null
n=$(consumer core-locktest $core github.com/locktag/locktag/locker/locktest)
consumer miniredis-alone github.com/alicebob/miniredis/v2 >/dev/null
mods() { (cd "$tmp/$1" && go list -m -f '{{.Path}}' all | tail -n +2 | sort); }
extra=$(comm -23 <(mods core-locktest) <(mods core) |
	grep -vxF -f <(mods miniredis-alone; echo github.com/alicebob/miniredis/v2; echo github.com/locktag/locktag/locker/locktest) || true)
if [ -n "$extra" ]; then
	echo "footprint: locktest adds modules beyond its own and miniredis's graph:" >&2
	echo "$extra" >&2
	fail=1
else
	echo "footprint: core + locktest consumer: $n modules, $(($n - $(mods core | wc -l) - 1)) more than the core's (locktest and miniredis's graph only)"
fi
# Nor may the kit raise a version the core's consumer builds with: adding
# it to a service's tests must not change what the service itself links.
vers() { (cd "$tmp/$1" && go list -m -f '{{.Path}} {{.Version}}' all | tail -n +2 | grep -v '^github.com/locktag/' | sort); }
raised=$(join <(vers core) <(vers core-locktest) | awk '$2 != $3 {print $1 ": " $2 " -> " $3}')
if [ -n "$raised" ]; then
	echo "footprint: locktest raises versions the core's consumer builds with:" >&2
	echo "$raised" >&2
	fail=1
else
	echo "footprint: core + locktest consumer: no version of the core's graph raised"
fi
# The operator command, as a user installs it: go install from a module of
# its own (replaces to this checkout: the proxy does not have it), without
# go.work. It must build and run, and its graph may hold beyond go-redis's
# own only our three modules (the command, the core, locker/goredis),
# redigo (the core's default driver) and google/uuid.
pins[github.com/redis/go-redis/v9]=$(version locker/cmd/locktag github.com/redis/go-redis/v9)
consumer goredis-alone github.com/redis/go-redis/v9 >/dev/null
cmd="$tmp/cmd-locktag"
mkdir -p "$cmd"
{
	printf 'module example.com/cmd-locktag\n\ngo 1.26.0\n\n'
	echo "replace ("
	for m in "${modules[@]}"; do echo "	$(modpath "$m") => $root/$m"; done
	echo ")"
} >"$cmd/go.mod"
if (cd "$cmd" && go mod edit -require=github.com/locktag/locktag/locker/cmd/locktag@v0.0.0-00010101000000-000000000000 &&
	GOBIN="$tmp/bin" go install github.com/locktag/locktag/locker/cmd/locktag && "$tmp/bin/locktag" version >/dev/null); then
	extra=$(comm -23 <(mods cmd-locktag) <(mods goredis-alone) |
		grep -vxE 'github.com/locktag/locktag(/locker/cmd/locktag|/locker/goredis)?|github.com/gomodule/redigo|github.com/google/uuid' || true)
	if [ -n "$extra" ]; then
		echo "footprint: the locktag command adds modules beyond go-redis's graph, ours, redigo and uuid:" >&2
		echo "$extra" >&2
		fail=1
	else
		echo "footprint: locktag command: go install builds it; $(mods cmd-locktag | wc -l) modules beside its own"
	fi
else
	echo "footprint: go install github.com/locktag/locktag/locker/cmd/locktag failed in a fresh module" >&2
	fail=1
fi
exit $fail
