package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"
)

// server is one redis-server child started by the tool: loopback only, on a
// free port, no persistence, killed when the tool ends (and by the kernel if
// the tool dies first).
type server struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// startServers starts n redis-servers in parallel.
func startServers(n int) ([]*server, error) {
	out := make([]*server, n)
	errs := make([]error, n)
	ch := make(chan int, n)
	for i := range n {
		go func() { out[i], errs[i] = startServer(); ch <- i }()
	}
	for range n {
		<-ch
	}
	if err := errors.Join(errs...); err != nil {
		for _, s := range out {
			if s != nil {
				s.stop()
			}
		}
		return nil, err
	}
	return out, nil
}

func startServer() (*server, error) { return startServerWith(nil) }

// startServerWith starts a redis-server as startServer does, adding the
// arguments more returns on each attempt (nil: none): a port of its own
// chosen per attempt, say.
func startServerWith(more func() ([]string, error)) (*server, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, errors.New("redis-server not found on PATH (apt-get install -y redis-server), or pass -addr")
	}
	dir, err := os.MkdirTemp("", "locktag-bench-")
	if err != nil {
		return nil, err
	}
	var last error
	for range 5 {
		// A failed attempt's stop removed dir.
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		port, err := freePort()
		if err != nil {
			last = err
			continue
		}
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir,
			"--daemonize", "no", "--protected-mode", "no", "--loglevel", "warning"}
		if more != nil {
			extra, err := more()
			if err != nil {
				last = err
				continue
			}
			args = append(args, extra...)
		}
		s := &server{addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir, done: make(chan struct{})}
		s.cmd = exec.Command("redis-server", args...)
		s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := s.cmd.Start(); err != nil {
			last = err
			continue
		}
		go func() { _ = s.cmd.Wait(); close(s.done) }()
		if last = waitPing(s.addr, s.done); last == nil {
			return s, nil
		}
		s.stop()
	}
	os.RemoveAll(dir)
	return nil, fmt.Errorf("cannot start redis-server: %w", last)
}

// freePort is a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitPing(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := redis.Dial("tcp", addr, redis.DialConnectTimeout(200*time.Millisecond), redis.DialReadTimeout(200*time.Millisecond))
		if err == nil {
			_, err = c.Do("PING")
			c.Close()
			if err == nil {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("redis-server exited early")
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s did not answer: %w", addr, err)
		}
	}
}

func (s *server) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
		}
	}
	os.RemoveAll(s.dir)
}

// serverStat is a snapshot of a server's work counters.
type serverStat struct {
	calls int64   // total of calls= in INFO commandstats: every command run, including those run by Lua scripts
	cpu   float64 // used_cpu_user + used_cpu_sys, seconds
}

func (a serverStat) sub(b serverStat) serverStat { return serverStat{a.calls - b.calls, a.cpu - b.cpu} }

func serverStats(addr string) (serverStat, error) {
	var st serverStat
	c, err := redis.Dial("tcp", addr, redis.DialConnectTimeout(time.Second), redis.DialReadTimeout(5*time.Second))
	if err != nil {
		return st, err
	}
	defer c.Close()
	info, err := redis.String(c.Do("INFO", "commandstats"))
	if err != nil {
		return st, err
	}
	for _, line := range strings.Split(info, "\n") {
		_, rest, ok := strings.Cut(line, ":calls=")
		if !ok {
			continue
		}
		n, _, _ := strings.Cut(rest, ",")
		v, _ := strconv.ParseInt(n, 10, 64)
		st.calls += v
	}
	cpu, err := redis.String(c.Do("INFO", "cpu"))
	if err != nil {
		return st, err
	}
	for _, line := range strings.Split(cpu, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, _ := strconv.ParseFloat(v, 64)
			st.cpu += f
		}
	}
	return st, nil
}

// serverStatsOf sums serverStats over addrs, and fails if any fails.
func serverStatsOf(addrs []string) (serverStat, error) {
	var t serverStat
	var errs []error
	for _, a := range addrs {
		s, err := serverStats(a)
		errs = append(errs, err)
		t.calls += s.calls
		t.cpu += s.cpu
	}
	return t, errors.Join(errs...)
}

// serverStatsAll sums serverStats over addrs. Each snapshot itself runs two
// INFO commands per server; callers subtract them.
func serverStatsAll(addrs []string) serverStat {
	var t serverStat
	for _, a := range addrs {
		s, _ := serverStats(a)
		t.calls += s.calls
		t.cpu += s.cpu
	}
	return t
}
