#!/usr/bin/env bash
# Runs the Redis-backed library tests on Valkey: installs valkey-server and
# valkey-cli when missing (Debian 12 from bookworm-backports; newer Debian
# and Ubuntu from their own suites), then `go test -count=1` in each
# package directory given (default: every Redis-backed library package)
# with LOCKTAG_REDIS_SERVER=valkey-server, so internal/redistest starts
# valkey-server and creates Clusters with valkey-cli.
#
#   .ci/valkey.sh                      # the default packages
#   .ci/valkey.sh locker locker/guard  # some of them
#
# Each directory is tested from inside it, so a directory that is a Go
# module of its own works as one that is a package of the root module.
# The Sentinel failover trials of replica acknowledgement
# (TestFailoverReplicaAck, half a minute per driver) run on Redis only:
# Valkey's WAIT is checked by TestClusterReplicaAck.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

install_valkey() {
	local sudo=""
	if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo=sudo; fi
	local codename=""
	[ -r /etc/os-release ] && codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	local target=()
	if [ "$codename" = bookworm ]; then
		# Debian 12 has Valkey 8 only in its backports suite.
		if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
			echo "valkey.sh: adding bookworm-backports to apt's sources"
			echo 'deb http://deb.debian.org/debian bookworm-backports main' |
				$sudo tee /etc/apt/sources.list.d/backports.list >/dev/null
		fi
		target=(-t bookworm-backports)
	fi
	echo "valkey.sh: installing valkey-server and valkey-tools"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${target[@]}" valkey-server valkey-tools >/dev/null
}

if ! command -v valkey-server >/dev/null 2>&1 || ! command -v valkey-cli >/dev/null 2>&1; then
	install_valkey
fi

export LOCKTAG_REDIS_SERVER=valkey-server
export LOCKTAG_REDIS_CLI=valkey-cli
version=$(valkey-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
pkgs=("$@")
if [ ${#pkgs[@]} -eq 0 ]; then
	pkgs=(locker locker/guard locker/redigo locker/goredis locker/rueidis locker/ops
		middleware middleware/stdhttp middleware/lockecho middleware/lockecho5 middleware/lockfiber interceptor interceptor/connectrpc
		locker/locktest locker/cmd/locktag locker/job internal/integration/monitoring)
fi

echo "=== valkey.sh: Redis-backed tests on Valkey $version ($(command -v valkey-server), $(valkey-cli --version))"
# One go test over every package, from the workspace: it runs two test
# binaries at a time (GOMAXPROCS on this machine), as the unit stage does.
paths=()
for p in "${pkgs[@]}"; do paths+=("github.com/locktag/locktag/$p"); done
echo "=== valkey.sh: go test -count=1 ${pkgs[*]} on Valkey $version"
if ! go test -count=1 -timeout 15m -skip "^TestFailoverReplicaAck$" "${paths[@]}"; then
	echo "=== valkey.sh: FAILED on Valkey $version (the FAIL lines above name the packages)" >&2
	exit 1
fi
echo "=== valkey.sh: all ${#pkgs[@]} packages passed on Valkey $version"
