#!/usr/bin/env bash
# staticcheck at the pinned release VERSION over the given packages:
#   staticcheck.sh VERSION [staticcheck flags and packages...]
# It is installed first and run after, so that a version the module proxy
# will not serve skips staticcheck with a warning naming the version and
# go's error (install_tool, lib.sh), while a finding still fails.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
version=${1:?usage: staticcheck.sh VERSION [flags] packages}
shift
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
install_tool staticcheck honnef.co/go/tools/cmd/staticcheck "$version" "$bin" || exit 0
"$bin/staticcheck" "$@"
