# Sourced by the .ci scripts (bash): pick_toolchain WANT LABEL exports
# GOTOOLCHAIN for the next Go release, fetched from the module proxy as the
# module golang.org/toolchain (GOTOOLCHAIN=goX go version downloads it).
#   - WANT (say go1.27.3) when it can be fetched;
#   - else the newest release of the same Go version below WANT that can
#     (go1.27.2, go1.27.1, ... as go list -m -versions golang.org/toolchain
#     lists them for this machine's system and architecture);
#   - else this machine's own Go (GOTOOLCHAIN=local), with a loud warning
#     on stderr: the stage then does not test the next Go release.
# It prints which toolchain it chose and why, each line starting with LABEL.

# toolchain_fetch GO ERRFILE succeeds when GOTOOLCHAIN=GO runs (downloading
# it when needed); go's error is left in ERRFILE.
toolchain_fetch() {
	local dir out
	dir=$(mktemp -d)
	# Outside any module: only GOTOOLCHAIN decides.
	if out=$(cd "$dir" && GOTOOLCHAIN=$1 GOWORK=off GOFLAGS= go version 2>"$2" </dev/null) &&
		[[ "$out " == "go version $1 "* ]]; then
		rm -rf "$dir"
		return 0
	fi
	[ -z "${out:-}" ] || echo "$out" >>"$2"
	rm -rf "$dir"
	return 1
}

# toolchain_error FILE prints go's error in FILE on one line.
toolchain_error() {
	awk '!/^go: downloading / { sub(/^[ \t]+/, ""); if ($0 != "") out = out (out == "" ? "" : "; ") $0 } END { print out }' "$1"
}

# pick_toolchain WANT LABEL: see the top of this file.
pick_toolchain() {
	local want=$1 label=$2 tmp minor patch v n os arch
	local -a lower=()
	tmp=$(mktemp -d)
	if toolchain_fetch "$want" "$tmp/err"; then
		echo "$label: Go toolchain $want, as asked"
		export GOTOOLCHAIN=$want
		rm -rf "$tmp"
		return 0
	fi
	echo "$label: Go toolchain $want cannot be fetched: $(toolchain_error "$tmp/err")"
	# goX.Y and, when WANT names one, its patch release.
	minor=$(sed -n 's/^\(go[0-9]*\.[0-9]*\).*/\1/p' <<<"$want")
	patch=$(sed -n 's/^go[0-9]*\.[0-9]*\.\([0-9]*\)$/\1/p' <<<"$want")
	os=$(GOTOOLCHAIN=local go env GOHOSTOS)
	arch=$(GOTOOLCHAIN=local go env GOHOSTARCH)
	if [ -n "$minor" ]; then
		# The releases goX.Y.N of this system below WANT, newest first.
		if (cd "$tmp" && GOTOOLCHAIN=local GOWORK=off GOFLAGS= go list -m -versions -retracted golang.org/toolchain >"$tmp/list" 2>"$tmp/err" </dev/null); then
			mapfile -t lower < <(tr ' ' '\n' <"$tmp/list" |
				sed -n "s/^v0\.0\.1-\(${minor//./\\.}\.[0-9]*\)\.$os-$arch\$/\1/p" |
				while read -r v; do
					n=${v##*.}
					if [ -z "$patch" ] || ((n < patch)); then echo "$n $v"; fi
				done | sort -rn | cut -d' ' -f2)
		else
			echo "$label: the toolchain versions cannot be listed: $(toolchain_error "$tmp/err")"
		fi
	fi
	for v in "${lower[@]}"; do
		if toolchain_fetch "$v" "$tmp/err"; then
			echo "$label: Go toolchain $v: the newest $minor release below $want that can be fetched"
			export GOTOOLCHAIN=$v
			rm -rf "$tmp"
			return 0
		fi
		echo "$label: Go toolchain $v cannot be fetched either: $(toolchain_error "$tmp/err")"
	done
	{
		echo "$label: ************************************************************"
		echo "$label: WARNING: no ${minor:-$want} toolchain can be fetched from the module proxy"
		echo "$label: WARNING: ($want and ${#lower[@]} release(s) below it tried)."
		echo "$label: WARNING: running on this machine's own Go, $(GOTOOLCHAIN=local go env GOVERSION):"
		echo "$label: WARNING: this stage does NOT test the next Go release."
		echo "$label: ************************************************************"
	} >&2
	export GOTOOLCHAIN=local
	rm -rf "$tmp"
}
