#!/usr/bin/env bash
# A consumer module in a go.work beside this checkout's library modules, as a
# contributor would set it up, must build every public package of every
# library module.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$root"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/consumer"
pkgs=$(for m in "${modules[@]}"; do (cd "$m" && GOWORK=off go list -f '{{if not (eq .Name "main")}}{{.ImportPath}}{{end}}' ./...); done | grep -v '/internal/' | grep -v '/internal$' | sort -u)
{
	echo "package consumer"
	echo
	echo "import ("
	for p in $pkgs; do echo "	_ \"$p\""; done
	echo ")"
} >"$tmp/consumer/consumer.go"
gover=$(sed -n 's/^go //p' go.mod)
printf 'module example.com/consumer\n\ngo %s\n' "$gover" >"$tmp/consumer/go.mod"
{
	printf 'go %s\n\nuse (\n\t./consumer\n' "$gover"
	for m in "${modules[@]}"; do printf '\t%s\n' "$root/$m"; done
	printf ')\n'
} >"$tmp/go.work"
cd "$tmp/consumer"
go build ./...
echo "consumer-check: a go.work consumer builds $(echo "$pkgs" | wc -l) packages"
