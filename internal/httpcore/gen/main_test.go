package main

import (
	"strings"
	"testing"
)

// TestUpToDate: every adapter's generated files are what the templates
// make now (as bash .ci/copies.sh check also says).
func TestUpToDate(t *testing.T) {
	root, err := findRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := run(root, true); err != nil {
		t.Fatal(err)
	}
}

func TestRewrap(t *testing.T) {
	long := strings.Repeat("word ", 20)
	for _, tc := range []struct{ name, in, want string }{
		{"short lines join", "// a b\n// c\nx", "// a b c\nx"},
		{"long lines wrap", "// " + long, "// word word word word word word word word word word word word word word\n// word word word word word word"},
		{"indented", "\t// a\n\t// b", "\t// a b"},
		{"blank line ends a paragraph", "// a\n//\n// b", "// a\n//\n// b"},
		{"code stays", "// a\n//\tcode  here\n// b", "// a\n//\tcode  here\n// b"},
		{"list items stay", "// a\n//   - x\n//   - y", "// a\n//   - x\n//   - y"},
		{"directives stay", "// a\n//\n//go:noinline\nfunc f()", "// a\n//\n//go:noinline\nfunc f()"},
		{"indentation ends a paragraph", "// a\n\t// b", "// a\n\t// b"},
		{"trailing comments stay", "x := 1 // a\n// b", "x := 1 // a\n// b"},
	} {
		if got := rewrap(tc.in); got != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}
