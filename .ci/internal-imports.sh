#!/usr/bin/env bash
# No package of a library module may import an internal package that
# belongs to another module (docs/versioning.md, "Shared code"): under
# minimum version selection that module can be at another version than the
# one the importer was written against. Tests may (they are not built by
# consumers). Fails naming each such import.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$root"
fail=0
checked=0
for m in "${modules[@]}"; do
	own=$(modpath "$m")
	# Every import of the module's own non-test packages, with the module
	# that provides it (GOWORK=off: as a consumer builds it).
	while read -r pkg imp; do
		[ -n "${imp:-}" ] || continue
		case $imp in */internal | */internal/*) ;; *) continue ;; esac
		provider=$(cd "$m" && GOWORK=off go list -f '{{if .Module}}{{.Module.Path}}{{end}}' "$imp")
		checked=$((checked + 1))
		if [ "$provider" != "$own" ]; then
			echo "internal-imports: $pkg (module $own) imports $imp, an internal package of module $provider" >&2
			fail=1
		fi
	done < <(cd "$m" && GOWORK=off go list -f '{{$p := .ImportPath}}{{range .Imports}}{{$p}} {{.}}{{"\n"}}{{end}}' ./... | sort -u)
done
[ $fail = 0 ] && echo "internal-imports: ${#modules[@]} modules, $checked imports of internal packages, each within its own module"
exit $fail
