package faults

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvRole names the environment variable that tells a re-executed test
// binary which child role to play. Role reads it.
const EnvRole = "LOCKTAG_FAULTS_ROLE"

// Role returns the role this process was started to play by StartChild, or
// "" in an ordinary test run. A package that starts children has
//
//	func TestHelperProcess(t *testing.T) {
//		switch faults.Role() {
//		case "":
//			t.Skip("only run as a child process")
//		case "holder":
//			runHolder()
//		}
//		os.Exit(0)
//	}
func Role() string { return os.Getenv(EnvRole) }

// Child is a child process running the test binary's TestHelperProcess in
// some role. It reads lines the child writes to stdout (Expect) and writes
// lines to its stdin (Send). It is SIGKILLed when the test ends.
type Child struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	exited chan struct{}

	mu     sync.Mutex
	stderr strings.Builder
	state  *os.ProcessState
}

// StartChild starts the test binary again as a child in role, with env
// ("NAME=value") added to this process's environment.
func StartChild(t testing.TB, role string, env ...string) *Child {
	t.Helper()
	// No test timeout: a child lives as long as its test wants (a soak
	// runs for many minutes). It dies with the parent (Pdeathsig below), and
	// the roles in this repository also exit when their stdin closes.
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1", "-test.timeout=0")
	cmd.Env = append(append(os.Environ(), EnvRole+"="+role), env...)
	// A child outlives nothing: if the test process dies, so does it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &Child{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 1024), exited: make(chan struct{})}
	cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.stderr.Len() < 1<<16 {
			c.stderr.Write(p)
		}
		return len(p), nil
	})
	if err := cmd.Start(); err != nil {
		t.Fatalf("faults: start child %s: %v", role, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	go func() {
		_ = cmd.Wait()
		c.mu.Lock()
		c.state = cmd.ProcessState
		c.mu.Unlock()
		close(c.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.exited
	})
	return c
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Pid is the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Send writes one line to the child's stdin.
func (c *Child) Send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		c.t.Fatalf("faults: send %q to child: %v", line, err)
	}
}

// Next returns the child's next stdout line, or fails the test after within.
// ok is false when the child closed its stdout (exited).
func (c *Child) Next(within time.Duration) (line string, ok bool) {
	c.t.Helper()
	select {
	case line, ok = <-c.lines:
		return line, ok
	case <-time.After(within):
		c.t.Fatalf("faults: no line from child %d within %v; stderr: %s", c.Pid(), within, c.Stderr())
		return "", false
	}
}

// Expect skips lines until one starts with prefix and returns the rest of
// it (after the prefix and one space), or fails the test after within.
func (c *Child) Expect(prefix string, within time.Duration) string {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		line, ok := c.Next(time.Until(deadline))
		if !ok {
			c.t.Fatalf("faults: child %d exited before %q; stderr: %s", c.Pid(), prefix, c.Stderr())
		}
		if rest, found := strings.CutPrefix(line, prefix); found {
			return strings.TrimPrefix(rest, " ")
		}
	}
}

// Lines returns the channel of the child's stdout lines; it is closed when
// the child closes its stdout.
func (c *Child) Lines() <-chan string { return c.lines }

// Kill sends SIGKILL (a crash: no deferred code, no release) and waits for
// the child to exit.
func (c *Child) Kill() {
	c.t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatalf("faults: kill child: %v", err)
	}
	<-c.exited
}

// Terminate sends SIGTERM, as a deploy's orchestrator does to stop a
// process, and returns without waiting (see Wait).
func (c *Child) Terminate() {
	c.t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		c.t.Fatalf("faults: terminate child: %v", err)
	}
}

// Stop sends SIGSTOP: every thread of the child freezes, timers included,
// as in a long GC pause or a suspended VM. Its sockets stay open.
func (c *Child) Stop() {
	c.t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		c.t.Fatalf("faults: stop child: %v", err)
	}
	// Wait until the kernel reports the process stopped ('T' in /proc).
	deadline := time.Now().Add(5 * time.Second)
	for !c.stopped() {
		if time.Now().After(deadline) {
			c.t.Fatalf("faults: child %d not stopped after SIGSTOP", c.Pid())
		}
		time.Sleep(time.Millisecond) // polling /proc with a deadline
	}
}

// Cont sends SIGCONT to a stopped child.
func (c *Child) Cont() {
	c.t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		c.t.Fatalf("faults: continue child: %v", err)
	}
}

func (c *Child) stopped() bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Pid()))
	if err != nil {
		return false
	}
	// pid (comm) state ...; comm may hold spaces, so cut after the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'T'
}

// Wait waits up to within for the child to exit and returns its exit code.
func (c *Child) Wait(within time.Duration) int {
	c.t.Helper()
	select {
	case <-c.exited:
	case <-time.After(within):
		c.t.Fatalf("faults: child %d did not exit within %v; stderr: %s", c.Pid(), within, c.Stderr())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state.ExitCode()
}

// Exited is closed when the child has exited.
func (c *Child) Exited() <-chan struct{} { return c.exited }

// Stderr returns what the child wrote to stderr so far (up to 64 KiB).
func (c *Child) Stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}
