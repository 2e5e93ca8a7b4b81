// Package typecheck_test checks how options pass between adapters, as a
// user's program sees it: every adapter accepts the guard's options and
// its own, and refuses another adapter's at construction with an error
// naming both. It builds and runs scratch programs, importing every
// adapter at once, against this checkout.
package typecheck_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository root, from this package's directory.
const root = "../../.."

// An adapter: its package, a constructor call with OPT for the option,
// one option of its own that lock guards take, and the names its option
// errors give it (its package, and the adapter as users know it).
type adapter struct {
	pkg, call, own, owner, name string
}

var adapters = []adapter{
	{"github.com/locktag/locktag/middleware", `middleware.NewLock(lk, tag, OPT)`, `middleware.WithErrorHandler(middleware.WriteProblem)`, "middleware", "middleware (Gin)"},
	{"github.com/locktag/locktag/middleware/stdhttp", `stdhttp.NewLock(lk, tag, OPT)`, `stdhttp.WithErrorHandler(stdhttp.WriteProblem)`, "stdhttp", "stdhttp (net/http)"},
	{"github.com/locktag/locktag/interceptor", `interceptor.New(lk, nil, OPT)`, `interceptor.WithProtoOptions(false)`, "interceptor", "interceptor (gRPC)"},
	{"github.com/locktag/locktag/interceptor/connectrpc", `connectrpc.New(lk, nil, OPT)`, `connectrpc.WithProtoOptions(false)`, "connectrpc", "connectrpc (Connect)"},
	{"github.com/locktag/locktag/middleware/lockecho", `lockecho.NewLock(lk, tag, OPT)`, `lockecho.WithErrorHandler(lockecho.WriteProblem)`, "lockecho", "lockecho (Echo v4)"},
	{"github.com/locktag/locktag/middleware/lockecho5", `lockecho5.NewLock(lk, tag, OPT)`, `lockecho5.WithErrorHandler(lockecho5.WriteProblem)`, "lockecho5", "lockecho5 (Echo v5)"},
	{"github.com/locktag/locktag/middleware/lockfiber", `lockfiber.NewLock(lk, tag, OPT)`, `lockfiber.WithErrorHandler(lockfiber.WriteProblem)`, "lockfiber", "lockfiber (Fiber v3)"},
}

// program returns a main package that makes calls, printing each call's
// error (or "ok") on a line of its own. Its Locker never dials: the
// constructors do not touch Redis.
func program(calls []string) string {
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n\t\"errors\"\n\t\"fmt\"\n\t\"strings\"\n\n")
	for _, a := range adapters {
		fmt.Fprintf(&b, "\t%q\n", a.pkg)
	}
	b.WriteString("\t\"github.com/gomodule/redigo/redis\"\n\t\"github.com/locktag/locktag/locker\"\n")
	b.WriteString("\t\"github.com/locktag/locktag/locker/guard\"\n\t\"github.com/locktag/locktag/locker/redigo\"\n)\n\n")
	b.WriteString("const tag = `key:\"k\"`\n\n")
	b.WriteString("func report[T any](_ T, err error) {\n")
	b.WriteString("\tswitch {\n\tcase err == nil:\n\t\tfmt.Println(\"ok\")\n")
	b.WriteString("\tcase errors.Is(err, locker.ErrBadOption):\n\t\tfmt.Println(strings.ReplaceAll(err.Error(), \"\\n\", \"; \"))\n")
	b.WriteString("\tdefault:\n\t\tfmt.Println(\"not ErrBadOption:\", err)\n\t}\n}\n\n")
	b.WriteString("func main() {\n")
	b.WriteString("\tlk, err := locker.New(redigo.New(&redis.Pool{Dial: func() (redis.Conn, error) { return nil, errors.New(\"never dialled\") }}))\n")
	b.WriteString("\tif err != nil {\n\t\tpanic(err)\n\t}\n\tdefer lk.Close()\n")
	for _, c := range calls {
		b.WriteString("\treport(" + c + ")\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// run writes src as the main package of a scratch module in a workspace
// with this checkout's modules and runs it, returning its output.
func run(t *testing.T, src string) (string, error) {
	t.Helper()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "work", "edit", "-json", filepath.Join(abs, "go.work"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go work edit -json: %v", err)
	}
	var work struct{ Use []struct{ DiskPath string } }
	if err := json.Unmarshal(out, &work); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gowork := "go 1.26.0\n\nuse (\n\t./scratch\n"
	for _, u := range work.Use {
		gowork += "\t" + filepath.Join(abs, filepath.FromSlash(u.DiskPath)) + "\n"
	}
	gowork += ")\n"
	files := map[string]string{
		"go.work":         gowork,
		"scratch/go.mod":  "module example.com/scratch\n\ngo 1.26.0\n",
		"scratch/main.go": src,
	}
	if sum, err := os.ReadFile(filepath.Join(abs, "go.work.sum")); err == nil {
		files["go.work.sum"] = string(sum)
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd = exec.Command("go", "run", ".")
	cmd.Dir = filepath.Join(dir, "scratch")
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(dir, "go.work"), "GOFLAGS=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stderr.String(), err
	}
	return stdout.String(), nil
}

// TestOptionsPerAdapter: each adapter accepts its own option and the
// guard's (the control), and refuses each other adapter's option at
// construction with locker.ErrBadOption naming the option, the adapter it
// belongs to and the adapter it was given to.
func TestOptionsPerAdapter(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a scratch program")
	}
	var calls, want []string
	for _, a := range adapters {
		calls = append(calls,
			strings.Replace(a.call, "OPT", a.own, 1),
			strings.Replace(a.call, "OPT", "guard.WithFailOpen()", 1),
			strings.Replace(a.call, "OPT", "guard.WithFailOpen(), "+a.own, 1))
		want = append(want, "ok", "ok", "ok")
	}
	for _, to := range adapters {
		for _, from := range adapters {
			if from.owner == to.owner {
				continue
			}
			calls = append(calls, strings.Replace(to.call, "OPT", from.own, 1))
			name := from.own[:strings.Index(from.own, "(")]
			want = append(want, fmt.Sprintf("locker: bad option: %s is an option of %s, given to %s", name, from.owner, to.name))
		}
	}
	src := program(calls)
	out, err := run(t, src)
	if err != nil {
		t.Fatalf("the program failed: %v\n%s\n%s", err, out, src)
	}
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(got), len(want), out)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s:\n got  %s\n want %s", calls[i], got[i], want[i])
		}
	}
}
