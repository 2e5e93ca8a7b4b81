// Command surface counts the exported identifiers of every library module
// in a checkout: package-level constants, variables, functions and types,
// and the exported methods of exported types, in every package that is
// neither internal, a command, nor test-only. The release notes quote its
// counts; run it from the repository root:
//
//	go run ./internal/cmd/surface [dir]
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	counts, err := count(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "surface:", err)
		os.Exit(1)
	}
	mods := make([]string, 0, len(counts))
	total := 0
	for m, n := range counts {
		mods = append(mods, m)
		total += n
	}
	slices.Sort(mods)
	for _, m := range mods {
		fmt.Printf("%-28s %5d\n", m, counts[m])
	}
	fmt.Printf("%-28s %5d\n", "total", total)
}

// count returns the exported identifiers per module directory (relative
// to root; "." for the root module).
func count(root string) (map[string]int, error) {
	counts := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		name := d.Name()
		if rel != "." && (strings.HasPrefix(name, ".") || name == "internal" || name == "testdata" || name == "example-app" || name == "bench" || name == "examples") {
			return filepath.SkipDir
		}
		mod := module(root, rel)
		if mod == "" {
			return nil
		}
		n, err := exported(path)
		if err != nil {
			return err
		}
		if n > 0 {
			counts[mod] += n
		}
		return nil
	})
	return counts, err
}

// module returns the directory of the go.mod that owns dir.
func module(root, dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(root, d, "go.mod")); err == nil {
			return d
		}
		if d == "." || d == "/" {
			return ""
		}
	}
}

// exported counts the exported identifiers of the library package in dir.
func exported(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	fset := token.NewFileSet()
	n := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return 0, err
		}
		if f.Name.Name == "main" {
			continue
		}
		for _, decl := range f.Decls {
			n += exportedIn(decl)
		}
	}
	return n, nil
}

func exportedIn(decl ast.Decl) int {
	n := 0
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return 0
		}
		if d.Recv != nil && !ast.IsExported(recvType(d.Recv.List[0].Type)) {
			return 0
		}
		return 1
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					n++
				}
			case *ast.ValueSpec:
				for _, id := range s.Names {
					if id.IsExported() {
						n++
					}
				}
			}
		}
	}
	return n
}

// recvType returns the name of a method's receiver type.
func recvType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}
