package keyexpr

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// allowedImports is what keyexpr may import besides the standard library
// (docs/architecture.md, "Layout"): the leaf that holds ErrBadOption,
// which itself imports the standard library only. The tag language
// imports neither locker nor its driver seam.
var allowedImports = map[string][]string{
	".":                     {"github.com/locktag/locktag/internal/optionerr"},
	"../internal/optionerr": {},
}

// TestLayers: keyexpr and the leaf it shares with locker/driver import
// the standard library and allowedImports only.
func TestLayers(t *testing.T) {
	for dir, allowed := range allowedImports {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
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
				first, _, _ := strings.Cut(path, "/")
				if strings.Contains(first, ".") && !slices.Contains(allowed, path) {
					t.Errorf("%s imports %s: only the standard library and %v are allowed", f, path, allowed)
				}
			}
		}
	}
}
