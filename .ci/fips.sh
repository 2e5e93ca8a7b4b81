#!/usr/bin/env bash
# FIPS 140-only stage: the tests of every library module and of the example
# app with GODEBUG=fips140=only, where crypto/sha1, GCM with a nonce chosen
# by the caller, short HMAC keys and every other use the FIPS 140-3 module
# does not allow panic or fail. Processes the tests start (the example app,
# workers) inherit the setting. internal/integration/fips is one program that
# imports every library module and sets the mode itself (//go:debug).
# Tests run with -short, as in the versions stage.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$root"
pkgs=()
for m in "${modules[@]}" example-app; do
	mapfile -t -O "${#pkgs[@]}" pkgs < <(cd "$root/$m" && go list ./...)
done
pkgs+=(github.com/locktag/locktag/internal/integration/fips)
echo "=== fips.sh: ${#pkgs[@]} packages with GODEBUG=fips140=only ($(go version))"
if ! GODEBUG=fips140=only go test -short -count=1 -timeout 15m "${pkgs[@]}"; then
	echo "=== fips.sh: FAILED in FIPS 140-only mode (the FAIL lines above name the packages)" >&2
	exit 1
fi
echo "=== fips.sh: every package passed in FIPS 140-only mode"
