# locktag — developer entry points. `make test` is the one CI runs.
GO ?= go

.PHONY: test deps vet fmt bench fuzz

## test: install what the tests need (redis-server) and run the whole suite with
## -race: the library module, the fault suite (its own module, so its tooling
## stays out of the library's go.mod) and the go.work consumer check.
test: deps
	$(GO) vet ./...
	cd internal/reliability && $(GO) vet ./...
	bash .ci/consumer-check.sh
	cd bench && $(GO) vet ./...
	$(GO) test -race -count=1 -timeout 15m ./...
	cd internal/reliability && $(GO) test -race -count=1 -timeout 15m ./...
	cd locker/job/gocronlock && $(GO) vet ./... && $(GO) test -race -count=1 ./...

## deps: install redis-server and redis-cli (for the Cluster tests), and
## chromium (for locker/ops's browser test), when missing (Debian/Ubuntu,
## needs root or sudo).
deps:
	@{ command -v redis-server && command -v redis-cli; } >/dev/null 2>&1 || { \
		echo "installing redis-server and redis-tools"; \
		SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server redis-tools >/dev/null; \
	}
	@command -v chromium >/dev/null 2>&1 || { \
		echo "installing chromium"; \
		SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null \
			|| echo "chromium could not be installed: locker/ops's browser test will skip and say so"; \
	}
	@redis-server --version && redis-cli --version
	@chromium --version 2>/dev/null || true

vet:
	$(GO) vet ./...
	cd internal/reliability && $(GO) vet ./...
	cd locker/job/gocronlock && $(GO) vet ./...

fmt:
	gofmt -l -w .

## bench: the locker benchmarks beside the sleep-retry baseline (see docs/benchmarks.md).
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./locker/ ./keyexpr/

## fuzz: run each fuzzer for a short while.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseTag -fuzztime 30s ./keyexpr/
	$(GO) test -run '^$$' -fuzz FuzzTemplate -fuzztime 30s ./keyexpr/
	$(GO) test -run '^$$' -fuzz FuzzInjective -fuzztime 30s ./keyexpr/

## soak: the fault-injection soak (docs/reliability.md) for SOAK (default 10m).
SOAK ?= 10m
.PHONY: soak
soak: deps
	cd internal/reliability && $(GO) test -run '^TestSoak$$' -v -timeout 60m . -soak=$(SOAK)
