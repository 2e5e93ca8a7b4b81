package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
)

// roleEnv, in a child process's environment, makes the test binary run
// that role (TestMain) instead of the tests: "holder" or "waiter" take a
// lock through the command's own connection options (argsEnv, the
// options joined by argsSep) and report on stdout; "main" runs the
// command's main with argsEnv as its arguments.
const (
	roleEnv = "LOCKTAG_CMD_TEST_ROLE"
	argsEnv = "LOCKTAG_CMD_TEST_ARGS"
	argsSep = "\x1f"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	switch os.Getenv(roleEnv) {
	case "":
		os.Exit(m.Run())
	case "main":
		os.Args = append([]string{"locktag"}, childArgs()...)
		main()
	default:
		os.Exit(childRole(os.Getenv(roleEnv)))
	}
}

func childArgs() []string {
	if a := os.Getenv(argsEnv); a != "" {
		return strings.Split(a, argsSep)
	}
	return nil
}

// childRole runs a holder or a waiter of the lock LOCKTAG_CMD_TEST_NAME:
//
//	holder  obtains it (the watchdog's lease), prints "HELD fence", waits
//	        until the lease's context ends, prints "CAUSE forced? cause",
//	        then "RELEASE error-or-ok" after its Release
//	waiter  obtains it waiting up to a minute, prints "GOT fence", holds
//	        it until its stdin closes, then releases it
//
// LOCKTAG_CMD_TEST_LIMIT > 0 takes a semaphore's permit instead.
func childRole(role string) int {
	o := defaultOptions(func(string) (string, bool) { return "", false })
	fs := flag.NewFlagSet(role, flag.ContinueOnError)
	o.register(fs)
	if err := fs.Parse(childArgs()); err != nil {
		fmt.Println("FAILED", err)
		return 1
	}
	s, err := o.open(os.Stderr)
	if err != nil {
		fmt.Println("FAILED", err)
		return 1
	}
	defer s.Close()
	ctx := context.Background()
	name := os.Getenv("LOCKTAG_CMD_TEST_NAME")
	p := locker.Params{Label: fmt.Sprintf("test %s pid %d", role, os.Getpid())}
	fmt.Sscan(os.Getenv("LOCKTAG_CMD_TEST_LIMIT"), &p.Limit)
	switch role {
	case "holder":
		le, err := s.lk.Obtain(ctx, name, p)
		if err != nil {
			fmt.Println("FAILED", err)
			return 1
		}
		fmt.Println("HELD", le.Token())
		<-le.Context().Done()
		cause := context.Cause(le.Context())
		fmt.Println("CAUSE", errors.Is(cause, locker.ErrForceReleased), cause)
		if err := le.Release(ctx); err != nil {
			fmt.Println("RELEASE", err)
		} else {
			fmt.Println("RELEASE ok")
		}
	case "waiter":
		p.Wait = time.Minute
		le, err := s.lk.Obtain(ctx, name, p)
		if err != nil {
			fmt.Println("FAILED", err)
			return 1
		}
		fmt.Println("GOT", le.Token())
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		_ = le.Release(ctx)
	default:
		fmt.Println("FAILED unknown role", role)
		return 2
	}
	return 0
}

// child is a holder or waiter process.
type child struct {
	cmd   *exec.Cmd
	lines chan string
	stdin interface{ Close() error }
}

// startChild starts the test binary as role for the lock name, connected
// with the command's options args.
func startChild(t *testing.T, role, name string, limit int, args []string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"="+role, argsEnv+"="+strings.Join(args, argsSep),
		"LOCKTAG_CMD_TEST_NAME="+name, fmt.Sprintf("LOCKTAG_CMD_TEST_LIMIT=%d", limit))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 64), stdin: stdin}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return c
}

// expect returns the child's next line, which must start with word.
func (c *child) expect(t *testing.T, word string) string {
	t.Helper()
	line := testwait.Recv(t, c.lines, "the child's "+word+" line") // "" once it exited
	if !strings.HasPrefix(line, word+" ") {
		t.Fatalf("child %d said %q, want %s ...", c.cmd.Process.Pid, line, word)
	}
	return strings.TrimPrefix(line, word+" ")
}

func (c *child) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// topology is a Redis deployment the command reaches with args.
type topology struct {
	args []string
	// masters answer PUBSUB and setup commands.
	masters func(t *testing.T) []*redistest.Server
}

func single(t *testing.T) topology {
	srv := redistest.Start(t)
	return topology{args: []string{"--addr", srv.Addr()}, masters: func(*testing.T) []*redistest.Server { return []*redistest.Server{srv} }}
}

func cluster(t *testing.T) topology {
	c := redistest.StartCluster(t, 3, 0)
	return topology{args: []string{"--addr", strings.Join(c.Addrs(), ","), "--cluster"},
		masters: func(t *testing.T) []*redistest.Server { return c.Masters(t) }}
}

func sentinel(t *testing.T) topology {
	s := redistest.StartSentinel(t, 1)
	return topology{args: []string{"--addr", strings.Join(s.Addrs(), ","), "--sentinel-master", redistest.SentinelMaster},
		masters: func(t *testing.T) []*redistest.Server { return []*redistest.Server{s.Master(t)} }}
}

// result is one run of the command.
type result struct {
	code           int
	stdout, stderr string
}

// locktag runs the command in this process with args and an empty
// environment.
func locktag(t *testing.T, args ...string) result {
	t.Helper()
	return locktagCtx(t, context.Background(), args...)
}

func locktagCtx(t *testing.T, ctx context.Context, args ...string) result {
	t.Helper()
	var out, errs bytes.Buffer
	code := run(ctx, args, &out, &errs, func(string) (string, bool) { return "", false })
	return result{code, out.String(), errs.String()}
}

// want fails the test unless r exited with code.
func (r result) want(t *testing.T, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	return r
}

// decode unmarshals r's stdout into v.
func (r result) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
}

// syncBuffer is a bytes.Buffer for a writer and a reader in two
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// watching runs watch with args in the background until the test ends;
// its output is in the buffers it returns.
func watching(t *testing.T, args ...string) (stdout, stderr *syncBuffer) {
	t.Helper()
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, stdout, stderr, func(string) (string, bool) { return "", false }) }()
	t.Cleanup(func() {
		cancel()
		if code := testwait.Recv(t, done, "watch to end"); code != exitOK {
			t.Errorf("watch ended with %d:\n%s", code, stderr.String())
		}
	})
	return stdout, stderr
}

// waitFor waits until buf holds a line with every one of parts.
func waitFor(t *testing.T, buf *syncBuffer, parts ...string) string {
	t.Helper()
	var found string
	testwait.Eventually(t, fmt.Sprintf("a line with %q in\n%s", parts, "(watch output)"), func() bool {
		for line := range strings.SplitSeq(buf.String(), "\n") {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(line, p)
			}
			if ok {
				found = line
				return true
			}
		}
		return false
	})
	return found
}

// session opens the command's own session for args (its connection
// options), closed when the test ends: in-process holders and waiters.
func sessionFor(t *testing.T, args ...string) *session {
	t.Helper()
	o := defaultOptions(func(string) (string, bool) { return "", false })
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	s, err := o.open(os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Hand on what it still holds at once: Close would give the
		// holders a second to release.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = s.lk.Shutdown(ctx)
		_ = s.rdb.Close()
	})
	return s
}

// controlSubscribers is the number of connections to srv subscribed to
// the control channel of the default prefix: a Locker subscribes it with
// its first lease, in the background, and a force-release's notice
// reaches only those subscribed (the others learn at their next
// renewal).
func controlSubscribers(srv *redistest.Server) int {
	v, err := redigo.Values(srv.Do("PUBSUB", "NUMSUB", "locktag:ctl"))
	if err != nil || len(v) != 2 {
		return 0
	}
	n, _ := redigo.Int(v[1], nil)
	return n
}
