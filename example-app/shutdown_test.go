package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/locktag/locktag/internal/testwait"
)

// childEnv, set to 1, makes the test binary run the app's main instead of
// the tests (TestMain): the app as a child process, with its own flags.
const childEnv = "LOCKTAG_EXAMPLE_APP_CHILD"

// app is the example app running as a child process.
type app struct {
	cmd    *exec.Cmd
	http   string        // "http://127.0.0.1:port"
	lines  chan string   // its stdout, line by line
	exited chan struct{} // closed when it has exited
	stderr strings.Builder
}

// startApp starts the app (embedded miniredis) with args on free ports and
// waits for its banner. It is killed when the test ends, if still running.
func startApp(t *testing.T, args ...string) *app {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a := &app{lines: make(chan string, 256), exited: make(chan struct{})}
	a.cmd = exec.Command(exe, append([]string{"-http", "127.0.0.1:0", "-grpc", "127.0.0.1:0", "-quiet"}, args...)...)
	a.cmd.Env = append(os.Environ(), childEnv+"=1")
	a.cmd.Stderr = &a.stderr
	stdout, err := a.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			a.lines <- sc.Text()
		}
		close(a.lines)
	}()
	go func() { _ = a.cmd.Wait(); close(a.exited) }()
	t.Cleanup(func() {
		select {
		case <-a.exited:
		default:
			_ = a.cmd.Process.Kill()
			<-a.exited
		}
	})
	for a.http == "" {
		line, ok := <-a.lines
		if !ok {
			t.Fatalf("the app exited before its banner: %s", a.stderr.String())
		}
		if rest, found := strings.CutPrefix(strings.TrimSpace(line), "http:"); found {
			a.http = strings.Fields(rest)[0]
		}
	}
	return a
}

// output waits for the app to exit and returns the rest of its stdout.
func (a *app) output(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for line := range a.lines {
		b.WriteString(line + "\n")
	}
	testwait.Recv(t, a.exited, "the app to exit")
	return b.String()
}

// TestCtrlCDrainsAndExitsZero: Ctrl-C (SIGINT) while a request holds a
// lock. The request is answered — by its handler when it finishes within
// the grace period, with 503 when it is cancelled at its end — its lock is
// released, and the app exits 0.
func TestCtrlCDrainsAndExitsZero(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		status int
		body   string
	}{
		{"finishes within the grace period", []string{"-latency", "3s", "-grace", "1m"}, http.StatusOK, `"sku":"apple"`},
		{"cancelled when the grace period ends", []string{"-latency", "1m", "-grace", "300ms"}, http.StatusServiceUnavailable, "server shutting down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := startApp(t, tc.args...)
			type answer struct {
				status int
				body   string
				err    error
			}
			answered := make(chan answer, 1)
			go func() {
				resp, err := http.Post(a.http+"/items/apple/buy", "", nil)
				if err != nil {
					answered <- answer{err: err}
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				answered <- answer{resp.StatusCode, string(b), nil}
			}()
			// The purchase holds item:apple (and sleeps in the store).
			testwait.Eventually(t, "the purchase to hold its lock", func() bool {
				resp, err := http.Get(a.http + "/debug/locktag/api/locks")
				if err != nil {
					return false
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return strings.Contains(string(b), `"name":"item:apple"`)
			})
			if err := a.cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			got := testwait.Recv(t, answered, "the purchase's answer")
			if got.err != nil || got.status != tc.status || !strings.Contains(got.body, tc.body) {
				t.Fatalf("the request in flight got %d %q (%v), want %d with %q", got.status, got.body, got.err, tc.status, tc.body)
			}
			out := a.output(t)
			if code := a.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(out, "stopped") {
				t.Fatalf("exit status %d, want 0; stdout:\n%s\nstderr:\n%s", code, out, a.stderr.String())
			}
		})
	}
}
