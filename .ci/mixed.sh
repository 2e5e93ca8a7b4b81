#!/usr/bin/env bash
# Mixed-version stage: worker processes of the previous release (the first
# commit in .ci/protocol-base) and of HEAD share one Redis, kind by kind
# (internal/reliability/mixed), then a 3-master Cluster; a control pair
# known not to interoperate (the second commit: v0.10.0 with HEAD) must
# fail the same checks. The
# worker's source is HEAD's (internal/reliability/mixed/worker), copied
# into a checkout of each old commit and built there against that
# release's own core; the builds are cached per commit.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cache="${LOCKTAG_MIXED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/locktag-mixed}"
src="$root/internal/reliability/mixed/worker/main.go"
sum=$(sha256sum "$src" | cut -c1-12)
mapfile -t bases < <(sed -n 's/^\([0-9a-f]\{40\}\).*/\1/p' "$root/.ci/protocol-base")
tmp=$(mktemp -d)
cleanup() {
	for c in "${bases[@]}"; do git -C "$root" worktree remove --force "$tmp/$c" >/dev/null 2>&1 || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

# build COMMIT: the worker built against COMMIT's core, printed path.
build() {
	local c=$1 out="$cache/$1-$sum/worker"
	if [ ! -x "$out" ]; then
		if ! git -C "$root" cat-file -e "$c^{commit}" 2>/dev/null; then
			echo "mixed: the commit $c is not in this clone" >&2
			exit 1
		fi
		git -C "$root" worktree add --detach "$tmp/$c" "$c" >/dev/null 2>&1
		# In the release's go-redis driver module, whose go.mod replaces the
		# core with the checkout's own: the worker runs on a Cluster too.
		mkdir -p "$tmp/$c/locker/goredis/mixedworker" "$(dirname "$out")"
		cp "$src" "$tmp/$c/locker/goredis/mixedworker/main.go"
		(cd "$tmp/$c/locker/goredis" && GOWORK=off go build -o "$out" ./mixedworker)
	fi
	echo "$out"
}
old=$(build "${bases[0]}")
control=$(build "${bases[1]}")
(cd "$root/internal/reliability" && go build -o "$tmp/head" ./mixed/worker)
echo "mixed: previous release ${bases[0]:0:12}, control ${bases[1]:0:12}, HEAD $(git -C "$root" rev-parse --short HEAD)"
cd "$root/internal/reliability"
LOCKTAG_MIXED_OLD="$old" LOCKTAG_MIXED_NEW="$tmp/head" LOCKTAG_MIXED_CONTROL="$control" \
	go test -count=1 -timeout 10m -v -run 'TestMixedVersions|TestMixedCluster|TestMixedControl' ./mixed/ 2>&1 |
	grep -v '^=== \(RUN\|PAUSE\|CONT\)'
