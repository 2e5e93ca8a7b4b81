// Package codegen_test runs the protoc command line docs/connect.md gives,
// in a scratch module outside the tree, and serves one locked call through
// the generated connect-go and gRPC code.
package codegen_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/locktag/locktag/internal/redistest"
)

// root is the repository root, from this package's directory.
const root = "../../.."

// fromDocs returns the .proto and the protoc command (continuation lines
// joined) of docs/connect.md's code generation section.
func fromDocs(t *testing.T) (proto, protoc string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "connect.md"))
	if err != nil {
		t.Fatal(err)
	}
	p := regexp.MustCompile("(?s)```proto\n(syntax = .*?)```").FindSubmatch(doc)
	c := regexp.MustCompile(`(?m)^protoc (?:.*\\\n)*.*$`).Find(doc)
	if p == nil || c == nil {
		t.Fatal("docs/connect.md lacks the .proto or the protoc command")
	}
	return string(p[1]), strings.ReplaceAll(string(c), "\\\n", " ")
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func TestDocumentedCodegen(t *testing.T) {
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Skip("protoc not installed (make deps installs protobuf-compiler)")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	// The plugins, built from this module's tool requirements.
	bin := t.TempDir()
	for _, p := range []string{
		"google.golang.org/protobuf/cmd/protoc-gen-go",
		"connectrpc.com/connect/cmd/protoc-gen-connect-go",
		"google.golang.org/grpc/cmd/protoc-gen-go-grpc",
	} {
		run(t, ".", nil, "go", "build", "-o", bin, p)
	}

	// The scratch module: the documented .proto, a main.go that serves it
	// (testdata), a go.mod as a user would have it, with replace
	// directives to this checkout.
	proto, protoc := fromDocs(t)
	mod := t.TempDir()
	mainGo, err := os.ReadFile(filepath.Join("testdata", "main.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for f, b := range map[string][]byte{"proto/shop/v1/shop.proto": []byte(proto), "main.go": mainGo, "gen/.keep": nil} {
		dst := filepath.Join(mod, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gomod := "module example.com/shop\n\ngo 1.26.0\n\nreplace (\n"
	for _, m := range []string{"", "/interceptor", "/interceptor/connectrpc", "/interceptor/locktagv1"} {
		gomod += "\tgithub.com/locktag/locktag" + m + " => " + filepath.Join(abs, filepath.FromSlash(m)) + "\n"
	}
	gomod += ")\n"
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}

	// The documented command, with the plugins on PATH and the include
	// path the documented go mod download line would give.
	env := []string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"LOCKTAG_PROTO=" + filepath.Join(abs, "proto"),
	}
	cmd := protoc + " --go-grpc_out=gen --go-grpc_opt=paths=source_relative"
	run(t, mod, env, "bash", "-c", cmd)
	for _, f := range []string{"gen/shop/v1/shop.pb.go", "gen/shop/v1/shopv1connect/shop.connect.go", "gen/shop/v1/shop_grpc.pb.go"} {
		if _, err := os.Stat(filepath.Join(mod, f)); err != nil {
			t.Fatalf("protoc did not write %s: %v", f, err)
		}
	}

	goenv := []string{"GOWORK=off", "GOFLAGS=-mod=mod"}
	run(t, mod, goenv, "go", "mod", "tidy")
	srv := redistest.Start(t)
	out := run(t, mod, append(goenv, "REDIS_ADDR="+srv.Addr()), "go", "run", ".")
	for _, want := range []string{"connect: locked item:apple", "grpc: locked item:apple"} {
		if !strings.Contains(out, want) {
			t.Errorf("the generated service did not run under its proto option's lock: want %q in\n%s", want, out)
		}
	}
}
