package locktest

import (
	"context"
	"crypto/fips140"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"
)

// server is the Redis a Kit runs on: the embedded miniredis or a
// redis-server child process.
type server interface {
	addr() string
	close()
}

// embedded is a miniredis whose key expiries follow its clock (ClockTTL),
// and whose clock is the wall clock plus what Advance added.
type embedded struct {
	m *miniredis.Miniredis

	mu     sync.Mutex
	offset time.Duration // what Advance added to the wall clock
	stop   chan struct{} // stops the clock goroutine; nil until the first Advance
	done   chan struct{}
}

func startEmbedded() (*embedded, error) {
	m := miniredis.NewMiniRedis()
	// miniredis names scripts by SHA1 as Redis does, which FIPS 140-only
	// mode refuses in the process; its goroutines, started here, run
	// without that enforcement, as a real server would be outside it.
	var err error
	fips140.WithoutEnforcement(func() { err = m.Start() })
	if err != nil {
		return nil, fmt.Errorf("%w: miniredis: %w", ErrNoServer, err)
	}
	// TTLs run down with the clock, as on Redis: leases and records expire.
	m.ClockTTL(true)
	return &embedded{m: m}, nil
}

func (e *embedded) addr() string { return e.m.Addr() }

func (e *embedded) close() {
	e.mu.Lock()
	stop, done := e.stop, e.done
	e.stop = nil
	e.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	e.m.Close()
}

// advance moves the server's clock d ahead of the wall clock (more, after
// an earlier advance). miniredis has a settable time but no offset, so a
// goroutine keeps setting it to the wall clock plus the offset, every
// millisecond, from the first advance on.
func (e *embedded) advance(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.offset += d
	e.m.SetTime(time.Now().Add(e.offset))
	if e.stop != nil {
		return
	}
	e.stop, e.done = make(chan struct{}), make(chan struct{})
	go func(stop, done chan struct{}) {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				e.mu.Lock()
				e.m.SetTime(now.Add(e.offset))
				e.mu.Unlock()
			}
		}
	}(e.stop, e.done)
}

// process is a redis-server child process on a free loopback port, without
// persistence, in a temporary directory.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	port   int
	dir    string
}

// lookServer returns the path of the redis-server program bin (a name on
// PATH or a path), or an error matching ErrNoServer.
func lookServer(bin string) (string, error) {
	p, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrNoServer, bin, err)
	}
	return p, nil
}

func startProcess(bin string) (*process, error) {
	path, err := lookServer(bin)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "locktest-redis-")
	if err != nil {
		return nil, err
	}
	var last error
	for range 3 { // a free port can be taken between its finding and the bind
		p, err := launch(path, dir)
		if err == nil {
			return p, nil
		}
		last = err
	}
	_ = os.RemoveAll(dir)
	return nil, last
}

func launch(path, dir string) (*process, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	logPath := filepath.Join(dir, "redis.log")
	cmd := exec.Command(path,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--daemonize", "no", "--protected-mode", "no", "--logfile", logPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNoServer, path, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{}), port: port, dir: dir}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := p.ping()
		if err == nil {
			return p, nil
		}
		select {
		case <-p.exited:
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("%w: %s exited: %s", ErrNoServer, path, lastLines(log, 5))
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, fmt.Errorf("%w: %s did not answer within 10s: %w", ErrNoServer, path, err)
		}
	}
}

func (p *process) addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

func (p *process) ping() error {
	c, err := redis.Dial("tcp", p.addr(), redis.DialConnectTimeout(200*time.Millisecond),
		redis.DialReadTimeout(200*time.Millisecond))
	if err != nil {
		return err
	}
	defer c.Close()
	pong, err := redis.String(c.Do("PING"))
	if err == nil && pong != "PONG" {
		err = errors.New("unexpected PING reply " + pong)
	}
	return err
}

func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

func (p *process) close() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		p.kill()
	}
	_ = os.RemoveAll(p.dir)
}

// lastLines returns the last n lines of b.
func lastLines(b []byte, n int) string {
	end := len(b)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' && i != len(b)-1 {
			n--
			if n == 0 {
				return string(b[i+1 : end])
			}
		}
	}
	return string(b)
}

// newPool returns a redigo pool for addr with bounded dial, read and write
// times, so that calls fail fast while the Redis is away.
func newPool(addr string) *redis.Pool {
	return &redis.Pool{
		MaxIdle:     16,
		IdleTimeout: time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr,
				redis.DialConnectTimeout(time.Second),
				redis.DialReadTimeout(3*time.Second),
				redis.DialWriteTimeout(3*time.Second))
		},
	}
}
