# Shared by the .ci scripts: the repository root and the library modules.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mapfile -t modules < <(grep -v '^#' "$root/.ci/modules" | sed '/^$/d')
# modpath DIR prints the module path of the module in DIR.
modpath() { sed -n 's/^module //p' "$root/$1/go.mod"; }
