// Package typecheck_test checks what the compiler says about options:
// an adapter's own options are accepted by that adapter only, the
// guard's by every adapter. It builds scratch programs, as a user would
// write them, against this checkout.
package typecheck_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository root, from this package's directory.
const root = "../../.."

// An adapter: its package, a constructor call with OPT for the option,
// one option only it accepts, and the marker method its Option requires.
type adapter struct {
	name, pkg, call, own, marker string
}

var adapters = []adapter{
	{"gin", "github.com/locktag/locktag/middleware", `middleware.NewLock(lk, tag, OPT)`, `middleware.WithKeyHeader("X-Key")`, "GinOption"},
	{"net/http", "github.com/locktag/locktag/middleware/stdhttp", `stdhttp.NewLock(lk, tag, OPT)`, `stdhttp.WithKeyHeader("X-Key")`, "HTTPOption"},
	{"grpc", "github.com/locktag/locktag/interceptor", `interceptor.New(lk, nil, OPT)`, `interceptor.WithProtoOptions(false)`, "GRPCOption"},
	{"connect", "github.com/locktag/locktag/interceptor/connectrpc", `connectrpc.New(lk, nil, OPT)`, `connectrpc.WithProtoOptions(false)`, "ConnectOption"},
	{"echo", "github.com/locktag/locktag/middleware/lockecho", `lockecho.NewLock(lk, tag, OPT)`, `lockecho.WithKeyHeader("X-Key")`, "EchoOption"},
	{"echo5", "github.com/locktag/locktag/middleware/lockecho5", `lockecho5.NewLock(lk, tag, OPT)`, `lockecho5.WithKeyHeader("X-Key")`, "Echo5Option"},
	{"fiber", "github.com/locktag/locktag/middleware/lockfiber", `lockfiber.NewLock(lk, tag, OPT)`, `lockfiber.WithKeyHeader("X-Key")`, "FiberOption"},
}

// program returns a main package that makes calls, one a line from line
// 30 on (the header is padded to 29 lines).
func program(calls []string) string {
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n")
	for _, a := range adapters {
		fmt.Fprintf(&b, "\t%q\n", a.pkg)
	}
	b.WriteString("\t\"github.com/locktag/locktag/locker\"\n\t\"github.com/locktag/locktag/locker/guard\"\n)\n\n")
	b.WriteString("var (\n\tlk  *locker.Locker\n\ttag = `key:\"k\"`\n\t_   = guard.WithFailOpen\n)\n\n")
	for n := strings.Count(b.String(), "\n"); n < 28; n++ {
		b.WriteString("\n")
	}
	b.WriteString("func main() {\n")
	for _, c := range calls {
		b.WriteString("\t_, _ = " + c + "\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// build writes src as the main package of a scratch module in a
// workspace with this checkout's modules and runs go build on it,
// reporting every type error (-gcflags=-e).
func build(t *testing.T, src string) (string, error) {
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
	cmd = exec.Command("go", "build", "-gcflags=-e", "-o", os.DevNull, ".")
	cmd.Dir = filepath.Join(dir, "scratch")
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(dir, "go.work"), "GOFLAGS=")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = cmd.Run()
	return buf.String(), err
}

// TestOptionsTypedPerAdapter: each adapter's own option given to any
// other adapter is a compile error at its call, naming the marker method
// the option lacks. The control: each adapter with its own option and a
// guard option compiles, so the errors come from the options' types alone.
func TestOptionsTypedPerAdapter(t *testing.T) {
	if testing.Short() {
		t.Skip("builds scratch programs")
	}
	var good []string
	for _, a := range adapters {
		good = append(good,
			strings.Replace(a.call, "OPT", a.own, 1),
			strings.Replace(a.call, "OPT", "guard.WithFailOpen()", 1),
			strings.Replace(a.call, "OPT", "guard.WithLogger(nil), "+a.own, 1))
	}
	if out, err := build(t, program(good)); err != nil {
		t.Fatalf("control: each adapter with its own and the guard's options does not compile: %v\n%s", err, out)
	}

	type wrong struct {
		line     int
		from, to adapter
	}
	var calls []string
	var want []wrong
	for _, to := range adapters {
		for _, from := range adapters {
			if from.name == to.name {
				continue
			}
			want = append(want, wrong{30 + len(calls), from, to})
			calls = append(calls, strings.Replace(to.call, "OPT", from.own, 1))
		}
	}
	out, err := build(t, program(calls))
	if err == nil {
		t.Fatalf("a program passing every adapter's option to every other adapter compiled:\n%s", program(calls))
	}
	for _, w := range want {
		// e.g. ./main.go:22:40: cannot use middleware.WithKeyHeader("X-Key")
		// (value of interface type middleware.Option) as connectrpc.Option
		// value in argument to connectrpc.New: middleware.Option does not
		// implement connectrpc.Option (missing method ConnectOption)
		re := regexp.MustCompile(fmt.Sprintf(`(?m)^\./main\.go:%d:\d+: cannot use .*\(missing method %s\)$`, w.line, w.to.marker))
		if !re.MatchString(out) {
			t.Errorf("%s option to the %s adapter (line %d): no compile error naming %s in\n%s", w.from.name, w.to.name, w.line, w.to.marker, out)
		}
	}
	if n := strings.Count(out, "cannot use "); n != len(want) {
		t.Errorf("%d errors, want %d:\n%s", n, len(want), out)
	}
}
