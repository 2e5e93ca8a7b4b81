package locker_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// engineImports is what each engine package may import of the engine
// (docs/architecture.md, "Inside locker"): each layer only the layers
// below it. A package missing here fails the test: place it in the
// layering (here and in the document) first.
var engineImports = map[string][]string{
	"single":    {"preflight", "backend", "hub", "protocol", "callctx", "tally", "lockerr"},
	"quorum":    {"preflight", "backend", "hub", "protocol", "callctx", "tally", "lockerr"},
	"admin":     {"preflight", "backend", "hub", "protocol", "callctx", "tally", "lockerr"},
	"records":   {"backend", "hub", "protocol", "callctx", "tally", "lockerr"},
	"rate":      {"backend", "hub", "protocol", "callctx", "tally", "lockerr"},
	"logs":      {"admin", "keeper", "records", "lockerr"},
	"keeper":    {},
	"preflight": {"backend", "hub", "protocol", "callctx", "tally", "lockerr"},
	"backend":   {"hub", "protocol", "callctx", "tally", "lockerr"},
	"hub":       {"callctx", "protocol"},
	"protocol":  {"callctx"},
	"callctx":   {"lockerr"},
	"tally":     {"lockerr"},
	"lockerr":   {},
}

// TestEngineLayers: the engine's packages import one another only as
// engineImports allows, and none imports package locker.
func TestEngineLayers(t *testing.T) {
	const mod = "github.com/locktag/locktag/locker"
	dirs, err := os.ReadDir("internal")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		pkg := d.Name()
		allowed, ok := engineImports[pkg]
		if !ok {
			t.Errorf("locker/internal/%s is not placed in the engine's layers (engineImports, docs/architecture.md)", pkg)
			continue
		}
		files, _ := filepath.Glob(filepath.Join("internal", pkg, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range af.Imports {
				path, _ := strconv.Unquote(im.Path.Value)
				switch {
				case path == mod:
					t.Errorf("%s imports package locker", f)
				case strings.HasPrefix(path, mod+"/internal/"):
					if dep := strings.TrimPrefix(path, mod+"/internal/"); !slices.Contains(allowed, dep) {
						t.Errorf("%s imports internal/%s: %s may import %v", f, dep, pkg, allowed)
					}
				}
			}
		}
	}
}
