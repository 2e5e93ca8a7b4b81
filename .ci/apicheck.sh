#!/usr/bin/env bash
# API-compatibility check: every library module's exported API against the
# last release (the commit named in .ci/api-base), with golang.org/x/exp's
# apidiff. An incompatible change fails; a deliberate one is released as a
# new minor version before v1 (docs/versioning.md), which moves api-base.
# apidiff is pinned (apidiff_version); when the module proxy will not serve
# that version, the check is skipped with a warning.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
export GOWORK=off
apidiff_version=v0.0.0-20261113113407-e3970619a1a4
base=$(sed -n '/^[0-9a-f]\{40\}/p' "$root/.ci/api-base" | head -1)
tmp=$(mktemp -d)
cleanup() { git -C "$root" worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
if ! git -C "$root" cat-file -e "$base^{commit}" 2>/dev/null; then
	echo "apicheck: the release commit $base is not in this clone" >&2
	exit 1
fi
# Installed first, run after: a version the module proxy will not serve
# skips the check with a warning (install_tool, lib.sh); an incompatibility
# still fails.
install_tool apidiff golang.org/x/exp/cmd/apidiff "$apidiff_version" "$tmp/bin" || exit 0
git -C "$root" worktree add --detach "$tmp/base" "$base" >/dev/null 2>&1
fail=0
for m in "${modules[@]}"; do
	path=$(modpath "$m")
	if [ ! -f "$tmp/base/$m/go.mod" ]; then
		echo "apicheck: $path is new since the release"
		continue
	fi
	if ! (cd "$tmp/base/$m" && "$tmp/bin/apidiff" -m -w "$tmp/api" "$path" 2>"$tmp/err"); then
		grep -v '^Ignoring internal package' "$tmp/err" >&2
		fail=1
		continue
	fi
	if ! out=$(cd "$root/$m" && "$tmp/bin/apidiff" -m -incompatible "$tmp/api" "$path" 2>"$tmp/err"); then
		grep -v '^Ignoring internal package' "$tmp/err" >&2
		fail=1
		continue
	fi
	if [ -n "$out" ]; then
		echo "apicheck: $path: incompatible with the release ($base):" >&2
		echo "$out" >&2
		fail=1
	else
		echo "apicheck: $path: compatible"
	fi
done
exit $fail
