#!/usr/bin/env bash
# Tests, without the network, what the CI does when the module proxy
# refuses versions:
#   - upgrade_module (.ci/upgrade.sh) walks down past a version whose .mod
#     is refused, past one that requires a refused version (its .mod, or
#     its .zip), and past one go mod tidy fails on; it prints what it
#     skipped and why, remembers a refusal for the next module, and leaves
#     pre-releases alone; the control (nothing refused) must choose the
#     newest version, and the walk-down's assertion must fail on it;
#   - pick_toolchain (.ci/toolchain.sh) walks down to the newest toolchain
#     of the same Go version that can be fetched, and falls back to this
#     machine's Go, loudly, when none can;
#   - .ci/staticcheck.sh skips staticcheck, with a warning naming the
#     version, when the pinned version cannot be installed, and fails on a
#     finding when it can.
# Each case gets a module proxy of its own in a temp dir (GOPROXY=file://),
# with versions published (.info, .mod, .zip) or refused (a file left out),
# and a module cache of its own. It prints one line a case and the summary
#   upgrade_test: N passed, M failed
# and fails when a case fails. KEEP=1 keeps the temp dir for a look.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/upgrade.sh"
. "$here/toolchain.sh"

tmp=$(mktemp -d)
# The module cache's files are read-only.
trap 'chmod -R u+w "$tmp" 2>/dev/null || true; rm -rf "$tmp"' EXIT
if [ -n "${KEEP:-}" ]; then
	trap - EXIT
	echo "upgrade_test: keeping $tmp"
fi
export GOSUMDB=off GOFLAGS=-mod=mod GOWORK=off GOTOOLCHAIN=local
export GONOSUMDB= GONOPROXY= GOPRIVATE= GOINSECURE= GOVCS=
hostos=$(go env GOHOSTOS)
hostarch=$(go env GOHOSTARCH)

# mkzip ZIP DIR PREFIX writes ZIP with DIR/PREFIX's files, named PREFIX/...
# (no directory entries: the module zip format has none).
mkzip() {
	if command -v zip >/dev/null 2>&1; then
		(cd "$2" && zip -qrD "$1" "$3")
	else
		python3 - "$@" <<-'PY'
			import os, sys, zipfile
			out, base, prefix = sys.argv[1:4]
			with zipfile.ZipFile(out, "w") as z:
			    for d, _, files in os.walk(os.path.join(base, prefix)):
			        for f in sorted(files):
			            p = os.path.join(d, f)
			            z.write(p, os.path.relpath(p, base))
		PY
	fi
}

# publish PROXY MOD VERSION MODE [REQUIRE...] puts MOD@VERSION on the proxy
# in PROXY: a go.mod requiring each REQUIRE ("path version") and a package
# named after MOD's last element, importing IMPORT when set. For
# honnef.co/go/tools, a fake staticcheck instead: cmd/staticcheck prints
# "finding" and exits 3; for golang.org/toolchain, a fake Go toolchain:
# bin/go prints its version. MODE: ok; refused (no .mod: go cannot read
# the version); nozip (no .zip); absent (neither).
publish() {
	local proxy=$1 mod=$2 v=$3 mode=$4 stage at req imp=''
	shift 4
	at=$proxy/$mod/@v
	stage=$(mktemp -d "$tmp/stage.XXXX")
	mkdir -p "$at" "$stage/$mod@$v"
	echo "$v" >>"$at/list"
	printf '{"Version":"%s","Time":"2025-01-01T00:00:00Z"}\n' "$v" >"$at/$v.info"
	{
		printf 'module %s\n\ngo 1.21\n' "$mod"
		for req in "$@"; do printf 'require %s\n' "$req"; done
	} >"$stage/$mod@$v/go.mod"
	if [ "$mod" = golang.org/toolchain ]; then
		mkdir -p "$stage/$mod@$v/bin" "$stage/$mod@$v/pkg/tool" "$stage/$mod@$v/lib"
		touch "$stage/$mod@$v/pkg/tool/.keep" "$stage/$mod@$v/lib/.keep" "$stage/$mod@$v/bin/gofmt"
		local gov=${v#v0.0.1-}
		gov=${gov%."$hostos-$hostarch"}
		printf '#!/bin/sh\necho "go version %s %s/%s"\n' "$gov" "$hostos" "$hostarch" >"$stage/$mod@$v/bin/go"
	elif [ "$mod" = honnef.co/go/tools ]; then
		mkdir -p "$stage/$mod@$v/cmd/staticcheck"
		printf 'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\nfunc main() {\n\tfmt.Println("finding")\n\tos.Exit(3)\n}\n' >"$stage/$mod@$v/cmd/staticcheck/main.go"
	else
		[ -z "${IMPORT:-}" ] || imp="import _ \"$IMPORT\""
		printf 'package %s\n\n%s\n' "${mod##*/}" "$imp" >"$stage/$mod@$v/${mod##*/}.go"
	fi
	case $mode in refused | absent) ;; *) cp "$stage/$mod@$v/go.mod" "$at/$v.mod" ;; esac
	case $mode in nozip | absent) ;; *) mkzip "$at/$v.zip" "$stage" "$mod@$v" ;; esac
}

# consumer DIR [MOD...] writes a module requiring example.com/dep v1.0.0
# and each MOD at v1.0.0, importing them.
consumer() {
	local dir=$1 mod
	shift
	mkdir -p "$dir"
	printf 'module example.com/consumer\n\ngo 1.21\n\n' >"$dir/go.mod"
	printf 'package main\n\n' >"$dir/main.go"
	for mod in example.com/dep "$@"; do
		printf 'require %s v1.0.0\n' "$mod" >>"$dir/go.mod"
		printf 'import _ "%s"\n' "$mod" >>"$dir/main.go"
	done
	printf '\nfunc main() {}\n' >>"$dir/main.go"
}

# useproxy NAME: a fresh proxy directory and module cache for a case.
useproxy() {
	proxy=$tmp/$1/proxy
	mkdir -p "$proxy"
	export GOPROXY=file://$proxy GOMODCACHE=$tmp/$1/modcache
}

# required DIR MOD prints the version of MOD the module in DIR selects.
required() { go -C "$1" list -m -f '{{.Version}}' "$2"; }

passed=0
failed=0
# check WHAT COND...: runs COND; a case passes when every check does.
failures=()
check() {
	local what=$1
	shift
	"$@" || failures+=("$what")
}
has() { grep -qF -- "$2" "$1"; }
lacks() { ! grep -qF -- "$2" "$1"; }
# endcase NAME OUT prints the case's line (with, when it failed, the
# checks that failed and its output OUT).
endcase() {
	local what
	if [ ${#failures[@]} = 0 ]; then
		echo "ok   $1"
		passed=$((passed + 1))
	else
		echo "FAIL $1"
		for what in "${failures[@]}"; do echo "    check failed: $what"; done
		echo "    output:"
		sed 's/^/    | /' "$2"
		failed=$((failed + 1))
	fi
	failures=()
}

# The walk-down's assertions for a consumer in DIR whose run printed OUT.
walked_down() {
	local dir=$1 out=$2
	[ "$(required "$dir" example.com/dep)" = v1.1.0 ] &&
		has "$out" "example.com/dep v1.0.0 => v1.1.0" &&
		has "$out" "skip example.com/dep@v1.2.0: "
}

# 1. dep v1.2.0's .mod is refused; v1.3.0-rc.1 resolves but is a
# pre-release: v1.1.0.
useproxy refused
publish "$proxy" example.com/dep v1.0.0 ok
publish "$proxy" example.com/dep v1.1.0 ok
publish "$proxy" example.com/dep v1.2.0 refused
publish "$proxy" example.com/dep v1.3.0-rc.1 ok
consumer "$tmp/refused/a"
out=$tmp/refused/out
(upgrade_module "$tmp/refused/a" a) >"$out" 2>&1 || echo "upgrade_module failed" >>"$out"
check "v1.2.0 skipped, v1.1.0 chosen" walked_down "$tmp/refused/a" "$out"
check "the reason names the refused file" has "$out" "v1.2.0.mod"
check "no pre-release tried" lacks "$out" "v1.3.0-rc.1"
endcase "a refused version is skipped: v1.1.0 chosen, v1.2.0 skipped" "$out"

# 2. The same proxy, two consumers in one shell: the second one skips
# v1.2.0 without asking go, from what the first one learnt.
useproxy cache
publish "$proxy" example.com/dep v1.0.0 ok
publish "$proxy" example.com/dep v1.1.0 ok
publish "$proxy" example.com/dep v1.2.0 refused
consumer "$tmp/cache/a"
consumer "$tmp/cache/b"
out=$tmp/cache/out
(upgrade_module "$tmp/cache/a" a && upgrade_module "$tmp/cache/b" b) >"$out" 2>&1 || echo "upgrade_module failed" >>"$out"
check "a chose v1.1.0" test "$(required "$tmp/cache/a" example.com/dep 2>&1)" = v1.1.0
check "b chose v1.1.0" test "$(required "$tmp/cache/b" example.com/dep 2>&1)" = v1.1.0
check "b knew v1.2.0 had failed" has "$out" "skip example.com/dep@v1.2.0: failed before: "
endcase "a refusal is remembered for the next module" "$out"

# 3. dep v1.2.0 resolves but requires (and imports) example.com/sub v1.1.0,
# whose .mod is refused: dep v1.1.0, and sub (indirect) stays at v1.0.0.
useproxy requirement
publish "$proxy" example.com/sub v1.0.0 ok
publish "$proxy" example.com/sub v1.1.0 refused
IMPORT=example.com/sub publish "$proxy" example.com/dep v1.0.0 ok "example.com/sub v1.0.0"
IMPORT=example.com/sub publish "$proxy" example.com/dep v1.1.0 ok "example.com/sub v1.0.0"
IMPORT=example.com/sub publish "$proxy" example.com/dep v1.2.0 ok "example.com/sub v1.1.0"
consumer "$tmp/requirement/a"
out=$tmp/requirement/out
(upgrade_module "$tmp/requirement/a" a) >"$out" 2>&1 || echo "upgrade_module failed" >>"$out"
check "v1.2.0 skipped, v1.1.0 chosen" walked_down "$tmp/requirement/a" "$out"
check "the reason names the refused requirement" has "$out" "example.com/sub@v1.1.0"
check "sub kept at v1.0.0" test "$(required "$tmp/requirement/a" example.com/sub 2>&1)" = v1.0.0
check "sub's refusal printed" has "$out" "example.com/sub v1.0.0 kept: no newer version resolves"
endcase "a version requiring a refused version is skipped: v1.1.0 chosen" "$out"

# 4. sub v1.1.0's .zip is refused, its .mod is not. dep v1.2.0 requires
# sub v1.1.0 without importing it; the consumer imports sub, so go get
# dep@v1.2.0 needs sub v1.1.0's zip: dep v1.1.0, sub v1.0.0.
useproxy zip
publish "$proxy" example.com/sub v1.0.0 ok
publish "$proxy" example.com/sub v1.1.0 nozip
publish "$proxy" example.com/dep v1.0.0 ok "example.com/sub v1.0.0"
publish "$proxy" example.com/dep v1.1.0 ok "example.com/sub v1.0.0"
publish "$proxy" example.com/dep v1.2.0 ok "example.com/sub v1.1.0"
consumer "$tmp/zip/a" example.com/sub
out=$tmp/zip/out
(upgrade_module "$tmp/zip/a" a) >"$out" 2>&1 || echo "upgrade_module failed" >>"$out"
check "v1.2.0 skipped, v1.1.0 chosen" walked_down "$tmp/zip/a" "$out"
check "the reason names the refused zip" has "$out" "skip example.com/dep@v1.2.0: go: upgraded example.com/sub v1.0.0 => v1.1.0: error finding sum for example.com/sub@v1.1.0"
check "sub kept at v1.0.0" test "$(required "$tmp/zip/a" example.com/sub 2>&1)" = v1.0.0
endcase "a version whose requirement's zip is refused is skipped: v1.1.0 chosen" "$out"

# 5. go get dep@v1.2.0 succeeds but go mod tidy fails on it (simulated: go
# is wrapped): the module is put back and upgraded again with go mod tidy
# after each go get: v1.1.0; that failure is not remembered for the next
# module.
useproxy tidy
publish "$proxy" example.com/dep v1.0.0 ok
publish "$proxy" example.com/dep v1.1.0 ok
publish "$proxy" example.com/dep v1.2.0 ok
consumer "$tmp/tidy/a"
out=$tmp/tidy/out
tidydir=$tmp/tidy/a
(
	go() {
		if [ "$*" = "-C $tidydir mod tidy" ] && grep -q 'example.com/dep v1.2.0' "$tidydir/go.mod"; then
			echo "go: simulated tidy failure" >&2
			return 1
		fi
		command go "$@"
	}
	upgrade_module "$tmp/tidy/a" a
	echo "remembered: ${upgrade_refused[example.com/dep@v1.2.0]:-no}"
) >"$out" 2>&1 || echo "upgrade_module failed" >>"$out"
check "v1.2.0 skipped, v1.1.0 chosen" walked_down "$tmp/tidy/a" "$out"
check "careful pass announced" has "$out" "go mod tidy fails after these upgrades: go: simulated tidy failure"
check "the reason is tidy's" has "$out" "skip example.com/dep@v1.2.0: go: simulated tidy failure"
check "not remembered" has "$out" "remembered: no"
endcase "a version go mod tidy fails on is skipped: v1.1.0 chosen" "$out"

# 6. Control: nothing refused. v1.2.0 is chosen, and the walk-down's
# assertion fails here (so it can fail).
useproxy control
publish "$proxy" example.com/dep v1.0.0 ok
publish "$proxy" example.com/dep v1.1.0 ok
publish "$proxy" example.com/dep v1.2.0 ok
consumer "$tmp/control/a"
out=$tmp/control/out
(upgrade_module "$tmp/control/a" a) >"$out" 2>&1 || echo "upgrade_module failed" >>"$out"
check "v1.2.0 chosen" test "$(required "$tmp/control/a" example.com/dep 2>&1)" = v1.2.0
check "nothing skipped" lacks "$out" "skip "
check "the walk-down's assertion fails on the control" eval '! walked_down "$tmp/control/a" "$out"'
endcase "control: nothing refused, v1.2.0 chosen (and the walk-down check fails on it)" "$out"

# 7. Toolchains: go1.99.3 refused, go1.99.2 fetched (fake toolchains).
useproxy toolchain
for v in go1.99.1 go1.99.2 go1.99.3 go1.99.4; do
	mode=ok
	[ $v != go1.99.3 ] || mode=absent
	publish "$proxy" golang.org/toolchain "v0.0.1-$v.$hostos-$hostarch" $mode
done
out=$tmp/toolchain/out
(pick_toolchain go1.99.3 test && echo "GOTOOLCHAIN=$GOTOOLCHAIN") >"$out" 2>&1 || true
check "go1.99.2 chosen" has "$out" "GOTOOLCHAIN=go1.99.2"
check "go1.99.3 reported unavailable" has "$out" "go1.99.3 cannot be fetched: "
check "no version above go1.99.3 tried" lacks "$out" "go1.99.4"
endcase "toolchain: go1.99.3 refused, go1.99.2 (the newest below it) chosen" "$out"

# 8. Toolchains: no go1.98 at all: this machine's Go, with the warning.
out=$tmp/toolchain/out-none
(pick_toolchain go1.98.5 test && echo "GOTOOLCHAIN=$GOTOOLCHAIN") >"$out" 2>&1 || true
check "local Go chosen" has "$out" "GOTOOLCHAIN=local"
check "warning printed" has "$out" "WARNING: no go1.98 toolchain can be fetched"
check "says what runs instead" has "$out" "running on this machine's own Go, $(go env GOVERSION)"
endcase "toolchain: none can be fetched, local Go with a loud warning" "$out"

# 9. staticcheck.sh: the pinned version refused is skipped with a warning
# (exit 0); served, it runs, and its finding fails.
useproxy staticcheck
publish "$proxy" honnef.co/go/tools v0.8.2 refused
out=$tmp/staticcheck/out
status=0
bash "$here/staticcheck.sh" v0.8.2 ./... >"$out" 2>&1 || status=$?
check "refused: exit 0" test $status = 0
check "refused: warning names the tool and version" has "$out" "WARNING: staticcheck v0.8.2 could not be installed; staticcheck is SKIPPED."
check "refused: go's error shown" has "$out" "v0.8.2.mod"
useproxy staticcheck-served
publish "$proxy" honnef.co/go/tools v0.8.2 ok
status=0
bash "$here/staticcheck.sh" v0.8.2 ./... >"$out.finding" 2>&1 || status=$?
cat "$out.finding" >>"$out"
check "finding: exit non-zero" test $status != 0
check "finding: printed" has "$out.finding" "finding"
check "finding: no warning" lacks "$out.finding" "WARNING"
endcase "staticcheck: refused version skipped with a warning, a finding fails" "$out"

echo "upgrade_test: $passed passed, $failed failed"
[ $failed = 0 ]
