# Sourced by the .ci scripts (bash): upgrade_module DIR [LABEL] upgrades
# every dependency of the module in DIR to the newest version that resolves
# on the module proxy in use (GOPROXY), which may refuse some versions (the
# version itself or one of its requirements) and refuse different ones from
# one day to the next.
#
# For each module in DIR's module graph that has a newer version (go list
# -m -u), direct dependencies first and then the indirect ones, it tries the
# newest version (the one go list -m -u offers), and when go get MOD@V fails
# it walks down the versions go list -m -versions MOD lists, newest first,
# until one resolves, never down to the current one. Releases only, unless
# the current version is a pre-release (pseudo-versions are); +incompatible
# versions only when the current one is. The github.com/locktag/ modules
# are skipped (replaced by directories, not on the module proxy).
#
# It prints, per module, what it chose and what it skipped and why (go's
# error, on one line). Decisions are kept for the rest of the shell: a
# version that failed go get is not tried again (in any module), and each
# module's version list is asked for once. The walk from the top skips the
# versions known to fail without asking go, so the first version it tries
# is the newest one not known to fail: the best known, when an earlier
# module walked down to it.
#
# go get MOD@V checks what MOD@V changes; go mod tidy, run once every
# dependency is upgraded, checks the whole module. When that final go mod
# tidy fails, the module is put back as it was and upgraded again with a go
# mod tidy after each go get (slower), so that the version it fails on is
# skipped too. Those failures are kept for this module only.
#
# Returns non-zero only when the module cannot be worked on at all: go mod
# tidy fails before any upgrade or after the careful pass, or go list -m -u
# fails.

declare -gA upgrade_refused=()  # MOD@V -> why go get MOD@V failed
declare -gA upgrade_versions=() # MOD -> go list -m -versions MOD, oldest first

# upgrade_go runs go with -mod=mod (go get and go mod tidy may write go.mod
# and go.sum).
upgrade_go() { GOFLAGS=-mod=mod go "$@"; }

# upgrade_reason FILE prints the error go wrote to FILE on one line: its last
# message with the indented lines that follow it, without go's progress
# lines (go: downloading M V, go: upgraded M V => W...).
upgrade_reason() {
	awk '
		/^go: (downloading|finding|extracting) [^ ]+ [^ ]+$/ { next }
		/^go: (upgraded|downgraded|added|removed) [^ ]+ [^ ]+( => [^ ]+)?$/ { next }
		/^[ \t]/ { if (msg != "") { sub(/^[ \t]+/, ""); if ($0 != "") msg = msg "; " $0 } next }
		NF { msg = $0 }
		END { print (msg == "" ? "(go printed no error)" : msg) }
	' "$1"
}

# upgrade_prerelease V succeeds when version V is a pre-release (this
# includes pseudo-versions).
upgrade_prerelease() {
	local v=${1%%+*}
	[[ $v == *-* ]]
}

# upgrade_vlt A B succeeds when version A sorts before version B
# (semantic versioning; build metadata such as +incompatible is ignored).
upgrade_vlt() {
	local LC_ALL=C
	local a=${1#v} b=${2#v} ap= bp= i x y
	a=${a%%+*}
	b=${b%%+*}
	if [[ $a == *-* ]]; then ap=${a#*-} a=${a%%-*}; fi
	if [[ $b == *-* ]]; then bp=${b#*-} b=${b%%-*}; fi
	local -a an bn
	IFS=. read -r -a an <<<"$a"
	IFS=. read -r -a bn <<<"$b"
	for i in 0 1 2; do
		x=${an[i]:-0} y=${bn[i]:-0}
		if ((10#$x != 10#$y)); then
			((10#$x < 10#$y))
			return
		fi
	done
	# Same major.minor.patch: a pre-release sorts before the release.
	[ "$ap" = "$bp" ] && return 1
	[ -z "$ap" ] && return 1
	[ -z "$bp" ] && return 0
	local -a ai bi
	IFS=. read -r -a ai <<<"$ap"
	IFS=. read -r -a bi <<<"$bp"
	for ((i = 0; i < ${#ai[@]} && i < ${#bi[@]}; i++)); do
		x=${ai[i]} y=${bi[i]}
		[ "$x" = "$y" ] && continue
		if [[ $x =~ ^[0-9]+$ && $y =~ ^[0-9]+$ ]]; then
			((10#$x < 10#$y))
			return
		fi
		# Numeric identifiers sort before alphanumeric ones.
		[[ $x =~ ^[0-9]+$ ]] && return 0
		[[ $y =~ ^[0-9]+$ ]] && return 1
		[[ $x < $y ]]
		return
	done
	((${#ai[@]} < ${#bi[@]}))
}

# upgrade_candidates DIR MOD CUR UPD prints, one a line and newest first,
# the versions of MOD to try: UPD (what go list -m -u offers), then the
# listed versions below it and above CUR.
upgrade_candidates() {
	local dir=$1 mod=$2 cur=$3 upd=$4 v i
	local -a listed
	read -r -a listed <<<"${upgrade_versions[$mod]:-}"
	echo "$upd"
	for ((i = ${#listed[@]} - 1; i >= 0; i--)); do
		v=${listed[i]}
		upgrade_vlt "$v" "$upd" || continue
		upgrade_vlt "$cur" "$v" || continue
		if ! upgrade_prerelease "$cur" && upgrade_prerelease "$v"; then continue; fi
		if [[ $cur != *+incompatible && $v == *+incompatible ]]; then continue; fi
		echo "$v"
	done
}

# upgrade_try DIR TMP CAREFUL MOD V: go get MOD@V in DIR (and go mod tidy
# when CAREFUL is 1); a version its author retracted counts as a failure
# of go get. On failure DIR's go.mod and go.sum are put back, the
# reason is in TMP/reason and the status says which step failed: 1 go get,
# 2 go mod tidy.
upgrade_try() {
	local dir=$1 tmp=$2 careful=$3 mod=$4 v=$5 status=0
	cp "$dir/go.mod" "$tmp/try.mod"
	rm -f "$tmp/try.sum"
	if [ -f "$dir/go.sum" ]; then cp "$dir/go.sum" "$tmp/try.sum"; fi
	if ! upgrade_go -C "$dir" get "$mod@$v" >/dev/null 2>"$tmp/err" </dev/null; then
		status=1
	elif grep -q "^go: warning: $mod@$v: retracted" "$tmp/err"; then
		status=1
	elif [ "$careful" = 1 ] && ! upgrade_go -C "$dir" mod tidy >/dev/null 2>"$tmp/err"; then
		status=2
	fi
	if [ $status != 0 ]; then
		upgrade_reason "$tmp/err" >"$tmp/reason"
		cp "$tmp/try.mod" "$dir/go.mod"
		rm -f "$dir/go.sum"
		if [ -f "$tmp/try.sum" ]; then cp "$tmp/try.sum" "$dir/go.sum"; fi
	fi
	return $status
}

# upgrade_dep DIR TMP CAREFUL MOD CUR UPD upgrades MOD (at CUR when the list
# was made, UPD offered) to the newest candidate that resolves, and notes
# it in upgrade_module's chosen.
upgrade_dep() {
	local dir=$1 tmp=$2 careful=$3 mod=$4 cur=$5 upd=$6 now v status
	# An upgrade above may have raised MOD already.
	now=$(upgrade_go -C "$dir" list -m -f '{{.Version}}' "$mod" 2>/dev/null || true)
	[ -n "$now" ] || return 0
	if ! upgrade_vlt "$now" "$upd"; then
		[ "$now" = "$cur" ] || echo "  $mod $cur => $now (raised by the upgrades above)"
		return 0
	fi
	cur=$now
	if [ -z "${upgrade_versions[$mod]+x}" ]; then
		# -retracted: without it go reads the newest version's go.mod for
		# its retractions, and fails when that version is refused. A
		# retracted version is turned down by upgrade_try.
		upgrade_versions[$mod]=$(upgrade_go -C "$dir" list -m -versions -retracted -e -f '{{range .Versions}}{{.}} {{end}}' "$mod" 2>/dev/null </dev/null || true)
	fi
	local -a candidates
	mapfile -t candidates < <(upgrade_candidates "$dir" "$mod" "$cur" "$upd")
	for v in "${candidates[@]}"; do
		if [ -n "${upgrade_refused[$mod@$v]+x}" ]; then
			echo "  skip $mod@$v: failed before: ${upgrade_refused[$mod@$v]}"
			continue
		fi
		status=0
		upgrade_try "$dir" "$tmp" "$careful" "$mod" "$v" || status=$?
		if [ $status = 0 ]; then
			echo "  $mod $cur => $v"
			chosen[$mod]=$v
			return 0
		fi
		echo "  skip $mod@$v: $(cat "$tmp/reason")"
		# go get's failures hold in any module; go mod tidy's are this
		# module's.
		if [ $status = 1 ]; then upgrade_refused[$mod@$v]=$(cat "$tmp/reason"); fi
	done
	echo "  $mod $cur kept: no newer version resolves"
}

# upgrade_walk DIR TMP CAREFUL: one pass over DIR's dependencies.
upgrade_walk() {
	local dir=$1 tmp=$2 careful=$3 mod cur upd ind err line list
	local -a direct=() indirect=()
	if ! list=$(upgrade_go -C "$dir" list -m -u -e -f '{{if not .Main}}{{.Path}} {{.Version}} {{with .Update}}{{.Version}}{{else}}-{{end}} {{.Indirect}}{{with .Error}} error{{end}}{{"\n"}}{{end}}' all 2>"$tmp/err" </dev/null); then
		echo "  go list -m -u all fails: $(upgrade_reason "$tmp/err")" >&2
		return 1
	fi
	while read -r mod cur upd ind err; do
		[ -n "$mod" ] || continue
		case $mod in github.com/locktag/*) continue ;; esac
		if [ "$upd" = - ] && [ -n "$err" ]; then
			upgrade_go -C "$dir" list -m -u "$mod" >/dev/null 2>"$tmp/err" </dev/null || true
			echo "  skip $mod $cur: no update information: $(upgrade_reason "$tmp/err")"
			continue
		fi
		[ "$upd" != - ] || continue
		if [ "$ind" = true ]; then
			indirect+=("$mod $cur $upd")
		else
			direct+=("$mod $cur $upd")
		fi
	done <<<"$list"
	for line in "${direct[@]}" "${indirect[@]}"; do
		# shellcheck disable=SC2086 # three words: module, current, offered
		upgrade_dep "$dir" "$tmp" "$careful" $line
	done
}

# upgrade_module DIR [LABEL] upgrades the module in DIR (see the top of this
# file), printing what it does under LABEL (default DIR).
upgrade_module() {
	local dir=$1 label=${2:-$1} tmp mod v
	local -A chosen=()
	tmp=$(mktemp -d)
	echo "upgrade $label:"
	if ! upgrade_go -C "$dir" mod tidy >/dev/null 2>"$tmp/err"; then
		echo "upgrade $label: go mod tidy fails before any upgrade: $(upgrade_reason "$tmp/err")" >&2
		rm -rf "$tmp"
		return 1
	fi
	cp "$dir/go.mod" "$tmp/orig.mod"
	if [ -f "$dir/go.sum" ]; then cp "$dir/go.sum" "$tmp/orig.sum"; fi
	if ! upgrade_walk "$dir" "$tmp" 0; then
		rm -rf "$tmp"
		return 1
	fi
	if ! upgrade_go -C "$dir" mod tidy >/dev/null 2>"$tmp/err"; then
		echo "  go mod tidy fails after these upgrades: $(upgrade_reason "$tmp/err")"
		echo "  again from the start, with go mod tidy after each go get:"
		cp "$tmp/orig.mod" "$dir/go.mod"
		rm -f "$dir/go.sum"
		if [ -f "$tmp/orig.sum" ]; then cp "$tmp/orig.sum" "$dir/go.sum"; fi
		chosen=()
		if ! upgrade_walk "$dir" "$tmp" 1 || ! upgrade_go -C "$dir" mod tidy >/dev/null 2>"$tmp/err"; then
			echo "upgrade $label: go mod tidy fails: $(upgrade_reason "$tmp/err")" >&2
			rm -rf "$tmp"
			return 1
		fi
	fi
	# go get may add a requirement that go mod tidy then drops (a module
	# none of whose packages this module uses): say so.
	while read -r mod v; do
		if [ -n "${chosen[$mod]+x}" ] && [ "${chosen[$mod]}" != "$v" ]; then
			echo "  $mod ${chosen[$mod]} => $v: go mod tidy dropped the upgrade (not needed here)"
		fi
	done < <(upgrade_go -C "$dir" list -m -f '{{.Path}} {{.Version}}' all 2>/dev/null </dev/null || true)
	rm -rf "$tmp"
}
