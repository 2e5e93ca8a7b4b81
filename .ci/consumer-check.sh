#!/usr/bin/env bash
# A consumer module in a go.work beside this checkout, as a new user would set
# it up, must build every public package of the library module without
# replace tricks (issue 14: the fault tooling's old genproto once made
# interceptor's imports ambiguous). The library module must not require the
# fault tooling either.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
if grep -qE 'toxiproxy|zerolog' go.mod; then
	echo "consumer-check: go.mod requires the fault tooling (toxiproxy/zerolog)" >&2
	exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/consumer"
pkgs=$(go list -f '{{if not (eq .Name "main")}}{{.ImportPath}}{{end}}' ./... | grep -v '/internal/')
{
	echo "package consumer"
	echo
	echo "import ("
	for p in $pkgs; do echo "	_ \"$p\""; done
	echo ")"
} >"$tmp/consumer/consumer.go"
gover=$(sed -n 's/^go //p' go.mod)
printf 'module example.com/consumer\n\ngo %s\n' "$gover" >"$tmp/consumer/go.mod"
printf 'go %s\n\nuse (\n\t./consumer\n\t%s\n)\n' "$gover" "$root" >"$tmp/go.work"
cd "$tmp/consumer"
go build ./...
echo "consumer-check: a go.work consumer builds $(echo "$pkgs" | wc -l) packages"
