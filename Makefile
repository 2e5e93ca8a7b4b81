# locktag — developer entry points. `make test` is the one CI runs.
GO ?= go
# Every package of every module in go.work (the library modules, the
# example app, the test-only modules and the load tool).
ALL := github.com/locktag/locktag/...
# staticcheck's release, pinned so that a new check cannot fail CI unasked.
# Beside its default checks, lint asks that exported identifiers' comments
# begin with their name (ST1020 functions, ST1021 types, ST1022 variables).
# .ci/staticcheck.sh installs it, then runs it: when the module proxy will
# not serve this version, staticcheck is skipped with a warning; a finding
# fails.
STATICCHECK := v0.8.2

.PHONY: test deps vet fmt lint footprint unit reliability valkey fips versions apicheck mixed bench bench-smoke fuzz soak

## test: install what the tests need and run the whole suite: vet, staticcheck, gofmt,
## the footprint check (one fresh consumer per transport), every module's
## tests with -race on Redis, the fault suite, the Redis-backed library
## tests on Valkey, the library modules on their minimum dependency
## versions (Go 1.26) and on the latest (Go 1.27), and the
## API-compatibility check against the last release, and the
## mixed-version stage; every library module's tests again in FIPS
## 140-only mode; and a smoke run of the lock+unlock benchmarks with
## allocations (bench-smoke).
test: deps lint footprint unit reliability valkey fips bench-smoke versions apicheck mixed

## deps: install redis-server and redis-cli (the Cluster tests need the
## CLI), chromium (for the ops page's browser test), protoc (for the
## documented code generation test) and prometheus with promtool (for the
## dashboard and alert tests, internal/integration/monitoring, which start
## their own prometheus process), when missing (Debian/Ubuntu, needs root
## or sudo).
deps:
	@command -v protoc >/dev/null 2>&1 || { \
		echo "installing protobuf-compiler"; \
		SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq protobuf-compiler >/dev/null \
			|| echo "protoc could not be installed: the code generation test will skip and say so"; \
	}
	@{ command -v redis-server && command -v redis-cli; } >/dev/null 2>&1 || { \
		echo "installing redis-server and redis-tools"; \
		SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server redis-tools >/dev/null; \
	}
	@command -v chromium >/dev/null 2>&1 || { \
		echo "installing chromium"; \
		SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null \
			|| echo "chromium could not be installed: the ops page's browser test will skip and say so"; \
	}
	@{ command -v prometheus && command -v promtool; } >/dev/null 2>&1 || { \
		echo "installing prometheus (with promtool)"; \
		SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null \
			|| echo "prometheus could not be installed: the dashboard and alert tests will skip and say so"; \
	}
	@redis-server --version && redis-cli --version
	@chromium --version 2>/dev/null || true
	@prometheus --version 2>/dev/null | head -1 || true

## lint: go vet and staticcheck over every module, gofmt, the go.work
## consumer check, the shared code's copies (.ci/copies.sh), the rule
## that no module imports another module's internal package, and the
## offline test of the CI's own handling of refused module versions
## (.ci/upgrade_test.sh).
lint:
	$(GO) vet $(ALL)
	bash .ci/staticcheck.sh $(STATICCHECK) -checks 'inherit,ST1020,ST1021,ST1022' $(ALL)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	bash .ci/consumer-check.sh
	bash .ci/copies.sh check
	bash .ci/internal-imports.sh
	bash .ci/upgrade_test.sh

vet: lint

fmt:
	gofmt -l -w $$(git ls-files '*.go')

## footprint: fresh consumers per transport and their module graphs.
footprint:
	bash .ci/footprint.sh

## unit: every module's tests with -race, but the fault suite.
unit:
	$(GO) test -race -count=1 -timeout 15m $$($(GO) list $(ALL) | grep -v /internal/reliability)

## reliability: the fault and abuse suite (its own module).
reliability:
	$(GO) test -race -count=1 -timeout 15m github.com/locktag/locktag/internal/reliability/...

## valkey: the Redis-backed library packages on Valkey 8 (installed when
## missing).
valkey:
	bash .ci/valkey.sh

## fips: the library modules' tests and the example app's with
## GODEBUG=fips140=only (.ci/fips.sh).
fips:
	bash .ci/fips.sh

## versions: the library modules alone (no go.work) on the minimum versions
## their go.mod files require (with this machine's Go, 1.26), and on the
## latest versions that resolve on the module proxy (in a scratch copy;
## a refused version is skipped for the next one down, and the output
## says which and why) with the next Go release (GO_NEXT, default
## go1.27.3, fetched as a toolchain; the newest go1.27.x that can be
## fetched when it cannot, this machine's Go with a warning when none can).
versions:
	bash .ci/versions.sh min
	bash .ci/versions.sh latest

## apicheck: no incompatible API change against the last release.
apicheck:
	bash .ci/apicheck.sh

## mixed: workers of the previous release (.ci/protocol-base) and of HEAD
## on one Redis, kind by kind; the control pair (v0.10.0 with HEAD) must
## fail (docs/versioning.md#the-redis-protocol).
mixed:
	bash .ci/mixed.sh

## bench: the locker benchmarks beside the sleep-retry baseline (see docs/benchmarks.md).
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./locker/ ./keyexpr/

## bench-smoke: the uncontended lock+unlock benchmarks with allocations, 200
## pairs each, so that they compile and run: redigo (locker's
## BenchmarkUncontended and BenchmarkUncontendedParallel), go-redis
## (locker/goredis's BenchmarkPair) and every driver beside the peers on
## the same clients (bench/'s BenchmarkPair, rueidis included). It checks
## that they run, not their figures (docs/benchmarks.md).
bench-smoke:
	$(GO) test -run '^$$' -bench '^Benchmark(Uncontended|UncontendedParallel|Pair)$$' -benchmem -benchtime 200x ./locker/ ./locker/goredis/ ./bench/

## fuzz: run each fuzzer for a short while.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseTag -fuzztime 30s ./keyexpr/
	$(GO) test -run '^$$' -fuzz FuzzTemplate -fuzztime 30s ./keyexpr/
	$(GO) test -run '^$$' -fuzz FuzzInjective -fuzztime 30s ./keyexpr/

## soak: the fault-injection soak (docs/reliability.md) for SOAK (default 10m).
SOAK ?= 10m
soak: deps
	cd internal/reliability && $(GO) test -run '^TestSoak$$' -v -timeout 60m . -soak=$(SOAK)

## robustness: worker processes' histories checked against models (porcupine)
## under nemesis schedules drawn from seeds, each nemesis with a control that
## must fail (docs/reliability.md#robustness-histories-checked-against-models):
## make robustness SEEDS=N [SEED=S] [DURATION=30s] [NEMESIS=holder,...]
## [SERVERS=redis-server,valkey-server].
## SEED replays one seed; illegal histories are saved under
## LOCKTAG_ROBUSTNESS_OUT (default: locktag-robustness in the temp dir).
.PHONY: robustness
SEEDS ?= 10
DURATION ?= 30s
robustness:
	cd internal/reliability && SEEDS=$(SEEDS) SEED=$(SEED) DURATION=$(DURATION) NEMESIS=$(NEMESIS) SERVERS=$(SERVERS) \
		$(GO) test -count=1 -timeout 4h -v -run '^TestRobustness$$' ./robustness
