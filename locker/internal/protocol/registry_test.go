package protocol

import (
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/scripts from the script registry")

// TestScriptsGolden: every script Redis runs is in testdata/scripts as it
// runs it, and nothing else is. go test ./locker/internal/protocol -run TestScriptsGolden
// -args -update rewrites the files after a script changes.
func TestScriptsGolden(t *testing.T) {
	dir := filepath.Join("testdata", "scripts")
	reg := ByName()
	if *updateGolden {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, s := range reg {
			if err := os.WriteFile(filepath.Join(dir, name+".lua"), []byte(s.Source()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.lua"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".lua"))
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := reg[name]; !ok {
			t.Errorf("testdata/scripts/%s.lua: no such script in the registry (remove it, or run with -update)", name)
		}
	}
	for name, s := range reg {
		b, err := os.ReadFile(filepath.Join(dir, name+".lua"))
		if err != nil {
			t.Errorf("script %s has no golden file (run go test ./locker/internal/protocol -run TestScriptsGolden -args -update): %v", name, err)
			continue
		}
		if string(b) != s.Source() {
			t.Errorf("script %s differs from testdata/scripts/%s.lua (run with -update after reviewing the change)", name, name)
		}
	}
}

// TestScriptsDistinct: no two names share a script, so a name says which
// script a call runs.
func TestScriptsDistinct(t *testing.T) {
	seen := map[string]string{}
	for name, s := range ByName() {
		if other, ok := seen[s.Hash()]; ok {
			t.Errorf("scripts %s and %s are the same source", name, other)
		}
		seen[s.Hash()] = name
	}
}
