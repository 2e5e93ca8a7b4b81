# Shared by the .ci scripts: the repository root and the library modules.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mapfile -t modules < <(grep -v '^#' "$root/.ci/modules" | sed '/^$/d')
# modpath DIR prints the module path of the module in DIR.
modpath() { sed -n 's/^module //p' "$root/$1/go.mod"; }
# install_tool NAME PKG VERSION BINDIR installs the tool NAME (the command
# PKG at the pinned VERSION) into BINDIR. When it cannot be installed (the
# module proxy refuses the version or one of its requirements, or any other
# go install failure) it says so on stderr, naming the tool, the version and
# go's error, and fails: the caller then skips that tool rather than failing
# CI. Running the tool is left to the caller, so that a failure there (a
# finding) is told apart from one here.
install_tool() {
	local name=$1 pkg=$2 version=$3 bin=$4 err
	err=$(mktemp)
	if GOBIN=$bin go install "$pkg@$version" 2>"$err"; then
		rm -f "$err"
		return 0
	fi
	{
		echo "************************************************************"
		echo "WARNING: $name $version could not be installed; $name is SKIPPED."
		echo "go install $pkg@$version:"
		grep -v '^go: downloading ' "$err" | sed 's/^/    /'
		echo "************************************************************"
	} >&2
	rm -f "$err"
	return 1
}
