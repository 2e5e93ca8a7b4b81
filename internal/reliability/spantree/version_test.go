package spantree

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A binary built against locktag through a directory replace (as this
// module is) records the replace as version "(devel)"; the spans'
// instrumentation scope then says v0.0.0-devel, as observability.md
// promises, not "(devel)" and not the required v0.0.0. Test binaries
// carry no dependency build information, so a real binary is built.
func TestScopeVersionInABuiltBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "scopeversion")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/scopeversion").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "github.com/locktag/locktag v0.0.0-devel"; got != want {
		t.Fatalf("scope %q, want %q", got, want)
	}
}
