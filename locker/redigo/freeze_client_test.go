package redigo_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

// frozenClientEnv, set to a Redis address, makes TestFrozenClientChild
// the caller process TestFrozenClient freezes; _MODE and _DEADLINE say
// how it calls.
const frozenClientEnv = "LOCKTAG_REDIGO_FROZEN_CLIENT"

// TestFrozenClient: the calling process is frozen (SIGSTOP) for 4.5s
// while its goroutines call, then resumed; every call made after the
// resume succeeds within its deadline, through the pipelined connection as
// through pooled calls. With 1s deadlines the helper goroutine reads the
// pipelined replies; with 3s ones (more than half the stall timeout) the
// callers read their own.
func TestFrozenClient(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		deadline time.Duration
	}{
		{"pipelined", time.Second},
		{"pipelined", 3 * time.Second},
		{"pooled", time.Second},
	} {
		t.Run(fmt.Sprintf("%s/%v", tc.mode, tc.deadline), func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestFrozenClientChild$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), frozenClientEnv+"="+srv.Addr(),
				frozenClientEnv+"_MODE="+tc.mode, frozenClientEnv+"_DEADLINE="+tc.deadline.String())
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			lines := make(chan string, 1<<16)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			for line := range lines {
				if line == "READY" {
					break
				}
			}
			time.Sleep(200 * time.Millisecond) // calls flow before the freeze
			// Redis stops answering first, so that calls are in flight,
			// their replies unread, when the caller is frozen; it answers
			// them while the caller is frozen.
			srv.Freeze()
			time.Sleep(100 * time.Millisecond)
			_ = cmd.Process.Signal(syscall.SIGSTOP)
			srv.Thaw()
			time.Sleep(4500 * time.Millisecond) // the pause under test
			resumed := time.Now()
			_ = cmd.Process.Signal(syscall.SIGCONT)
			time.Sleep(3 * time.Second) // calls flow after the resume
			_ = stdin.Close()
			var after, failed int
			for line := range lines {
				f := strings.SplitN(line, " ", 3)
				if len(f) != 3 || f[0] == "---" || f[0] == "===" {
					continue
				}
				ns, err1 := strconv.ParseInt(f[0], 10, 64)
				took, err2 := time.ParseDuration(f[1])
				if err1 != nil || err2 != nil {
					continue
				}
				start := time.Unix(0, ns)
				if start.Before(resumed) {
					continue
				}
				after++
				if f[2] != "ok" {
					failed++
					t.Errorf("call started %v after the resume failed after %v: %s",
						start.Sub(resumed).Round(time.Millisecond), took.Round(time.Millisecond), f[2])
				}
			}
			if after == 0 {
				t.Fatal("no call was made after the resume")
			}
			t.Logf("%d calls after the resume, %d failed", after, failed)
		})
	}
}

// TestFrozenClientChild is the process TestFrozenClient freezes: it calls
// from 8 goroutines until its stdin closes, and prints each call's start,
// duration and outcome.
func TestFrozenClientChild(t *testing.T) {
	addr := os.Getenv(frozenClientEnv)
	if addr == "" {
		t.Skip("run by TestFrozenClient")
	}
	var opts []redigo.Option
	if os.Getenv(frozenClientEnv+"_MODE") == "pooled" {
		opts = append(opts, redigo.WithPipelining(0))
	}
	deadline, err := time.ParseDuration(os.Getenv(frozenClientEnv + "_DEADLINE"))
	if err != nil {
		t.Fatal(err)
	}
	d := redigo.New(addrPool(addr), opts...)
	script := driver.NewScript("return 1")
	var out sync.Mutex
	w := bufio.NewWriter(os.Stdout)
	call := func() {
		start := time.Now()
		ctx := &deadlineCtx{Context: context.Background(), dl: start.Add(deadline)}
		_, err := d.Eval(ctx, script, driver.Keys{})
		took := time.Since(start)
		res := "ok"
		if err != nil {
			res = err.Error()
		}
		out.Lock()
		fmt.Fprintf(w, "%d %v %s\n", start.UnixNano(), took, res)
		out.Unlock()
	}
	call()
	out.Lock()
	fmt.Fprintln(w, "READY")
	w.Flush()
	out.Unlock()
	stop := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(stop) }()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				call()
			}
		})
	}
	wg.Wait()
	out.Lock()
	w.Flush()
	out.Unlock()
}

// addrPool is redistest's pool (Server.NewPool) to addr, for a child
// process that has the address only.
func addrPool(addr string) *redis.Pool {
	return &redis.Pool{
		MaxIdle:     64,
		IdleTimeout: time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr, redis.DialConnectTimeout(time.Second),
				redis.DialReadTimeout(5*time.Second), redis.DialWriteTimeout(5*time.Second))
		},
	}
}
