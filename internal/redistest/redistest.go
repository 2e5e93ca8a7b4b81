// Package redistest starts real redis-server processes for tests.
//
// The server program is redis-server unless LOCKTAG_REDIS_SERVER names
// another (ServerEnv): LOCKTAG_REDIS_SERVER=valkey-server runs every test
// on Valkey, Cluster creation with valkey-cli (CLIEnv).
//
// Every server listens on a free loopback port chosen by the kernel, runs with
// persistence off (unless asked otherwise), lives in a temporary directory and
// is stopped by t.Cleanup. Tests never depend on a Redis started by hand.
// When redis-server is not on PATH the test fails (or, with LOCKTAG_SKIP_REDIS=1,
// is skipped) with a message that says how to install it.
package redistest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Server is one redis-server child process.
type Server struct {
	t    testing.TB // nil for servers from Launch
	dir  string
	port int
	args []string
	conf string // config file passed first (sentinels need one)

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	log    *os.File
}

// Option changes how a server is started.
type Option func(*config)

type config struct {
	args []string
	conf string
}

// WithArgs appends redis-server command-line arguments, e.g.
// WithArgs("--requirepass", "secret") or WithArgs("--appendonly", "yes").
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// WithConfigFile passes path to redis-server as its config file, before
// every command-line argument. Sentinels need one they can rewrite.
func WithConfigFile(path string) Option {
	return func(c *config) { c.conf = path }
}

// Start starts one redis-server on a free loopback port and waits until it
// answers PING. The server is stopped when the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	if _, err := exec.LookPath(ServerBinary()); err != nil && os.Getenv("LOCKTAG_SKIP_REDIS") == "1" {
		t.Skip(ServerBinary() + " not installed (LOCKTAG_SKIP_REDIS=1)")
	}
	s, err := Launch(opts...)
	if err != nil {
		t.Fatal(err)
	}
	s.t = t
	t.Cleanup(s.Close)
	return s
}

// Launch starts a server outside a test (for TestMain and examples); the
// caller ends it with Close.
func Launch(opts ...Option) (*Server, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if _, err := exec.LookPath(ServerBinary()); err != nil {
		return nil, fmt.Errorf("redistest: %s not found: %s", ServerBinary(), installHint())
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, args: c.args, conf: c.conf}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if s.port, lastErr = FreePort(); lastErr != nil {
			continue
		}
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("redistest: cannot start %s: %w", ServerBinary(), lastErr)
}

// StartN starts n independent servers (for Redlock and fault tests), in
// parallel.
//
// With -short, a test that asks for five servers or more (the Redlock
// suites) is skipped: the compatibility runs (.ci/versions.sh) use -short,
// the full runs do not.
func StartN(t testing.TB, n int, opts ...Option) []*Server {
	t.Helper()
	if n >= 5 && testing.Short() {
		t.Skipf("starts %d redis-servers: run without -short", n)
	}
	out := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() { out[i], errs[i] = Launch(opts...) })
	}
	wg.Wait()
	for _, s := range out {
		if s != nil {
			s.t = t
			t.Cleanup(s.Close)
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return out
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() error {
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--daemonize", "no",
		"--protected-mode", "no",
	}
	args = append(args, s.args...)
	if s.conf != "" {
		args = append([]string{s.conf}, args...)
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(ServerBinary(), args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s.ping() == nil {
			break
		}
		select {
		case <-exited:
			logf.Close()
			return fmt.Errorf("redis-server exited early: %s", tail(filepath.Join(s.dir, "redis.log")))
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			logf.Close()
			return fmt.Errorf("redis-server did not answer within 10s: %s", tail(filepath.Join(s.dir, "redis.log")))
		}
	}
	if err := s.answeredBy(cmd.Process.Pid); err != nil {
		// Another server holds the port (two free ports that were the
		// same one a moment apart): ours could not bind it.
		_ = cmd.Process.Kill()
		<-exited
		logf.Close()
		return err
	}
	s.mu.Lock()
	s.cmd, s.exited, s.log = cmd, exited, logf
	s.mu.Unlock()
	return nil
}

// answeredBy checks that the server answering on s's port is process
// pid, by the process_id of INFO server (a server that does not say is
// taken at its word).
func (s *Server) answeredBy(pid int) error {
	c, err := redis.Dial("tcp", s.Addr(), redis.DialConnectTimeout(time.Second),
		redis.DialReadTimeout(time.Second), s.dialAuth())
	if err != nil {
		return err
	}
	defer c.Close()
	info, err := redis.String(c.Do("INFO", "server"))
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			if got, _ := strconv.Atoi(v); got != pid {
				return fmt.Errorf("redistest: port %d answered by process %d, not the server started (%d)", s.port, got, pid)
			}
		}
	}
	return nil
}

func (s *Server) ping() error {
	c, err := redis.Dial("tcp", s.Addr(), redis.DialConnectTimeout(200*time.Millisecond),
		redis.DialReadTimeout(200*time.Millisecond), s.dialAuth())
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Do("PING")
	return err
}

// argValue is the value given to the command-line argument name, or "".
func (s *Server) argValue(name string) string {
	for i, a := range s.args {
		if a == name && i+1 < len(s.args) {
			return s.args[i+1]
		}
	}
	return ""
}

func (s *Server) dialAuth() redis.DialOption {
	for i, a := range s.args {
		if a == "--requirepass" && i+1 < len(s.args) {
			return redis.DialPassword(s.args[i+1])
		}
	}
	return redis.DialPassword("")
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Main is a TestMain for packages whose Example functions need a Redis: it
// starts a server, hands it to ready, runs the tests and examples, stops the
// server and exits with the tests' code.
func Main(m *testing.M, ready func(*Server)) {
	s, err := Launch()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if os.Getenv("LOCKTAG_SKIP_REDIS") == "1" {
			os.Exit(0)
		}
		os.Exit(1)
	}
	ready(s)
	code := m.Run()
	s.Close()
	os.Exit(code)
}

// Stop kills the server and waits for it to exit. Stop is idempotent.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited, logf := s.cmd, s.exited, s.log
	s.cmd, s.exited, s.log = nil, nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		s.errorf("redistest: redis-server pid %d did not exit", cmd.Process.Pid)
	}
	if logf != nil {
		_ = logf.Close()
	}
}

// Freeze stops the server process with SIGSTOP: it keeps its port and
// the kernel still accepts connections and buffers commands, but nothing
// is answered — a hung Redis, a paused VM or container, a network path
// that drops replies. Thaw resumes it; Stop and Close work on a frozen
// server.
func (s *Server) Freeze() { s.signal(syscall.SIGSTOP) }

// Thaw resumes a server stopped by Freeze.
func (s *Server) Thaw() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		s.errorf("redistest: %v to a server that is not running", sig)
		return
	}
	if err := cmd.Process.Signal(sig); err != nil {
		s.errorf("redistest: %v: %v", sig, err)
	}
}

// Close stops the server and removes its directory.
func (s *Server) Close() {
	s.Stop()
	_ = os.RemoveAll(s.dir)
}

// Restart stops the server and starts a new one on the same port and
// directory (so a server with persistence reloads its data).
func (s *Server) Restart() {
	s.Stop()
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // the old socket may not be released yet
	}
	s.errorf("redistest: restart: %v", err)
}

// Running reports whether the server process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// LogTail returns the last lines of the server's log (for failure messages).
func (s *Server) LogTail() string { return tail(filepath.Join(s.dir, "redis.log")) }

func (s *Server) errorf(format string, args ...any) {
	if s.t != nil {
		s.t.Helper()
		s.t.Fatalf(format, args...)
	}
	panic(fmt.Sprintf(format, args...))
}
