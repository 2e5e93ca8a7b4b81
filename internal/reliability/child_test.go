package reliability

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/reliability/faults"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// TestHelperProcess is not a test: it is the body of the child processes
// that faults.StartChild starts (the test binary run again). In a normal
// run it skips.
func TestHelperProcess(t *testing.T) {
	switch faults.Role() {
	case "":
		t.Skip("only runs as a child process started by a test")
	case "worker":
		childWorker()
	case "holder":
		childHolder()
	case "incrementer":
		childIncrementer()
	case "waiters":
		childWaiters()
	case "transfers":
		childTransfers()
	case "kindburst":
		childKindBurst()
	case "rater":
		childRater()
	case "ticker":
		childTicker()
	case "candidate":
		childCandidate()
	case "stepper":
		childStepper()
	case "terminee":
		childTerminee()
	default:
		fmt.Fprintln(os.Stderr, "unknown role", faults.Role())
		os.Exit(2)
	}
	os.Exit(0)
}

// childEnv is what a child reads from its environment.
type childEnv struct {
	addr, store, client, key, prefix      string
	iters                                 int
	ttl, wait, lease, renew, think, pause time.Duration
	// window is the Locker's grant window (locker.WithGrantWindow) and
	// call the bound of each Redis call (locker.WithCallTimeout); 0: the
	// default, and 1s.
	window, call time.Duration
	// The lock kind: limit (a semaphore) or mode ("read", "write").
	limit int
	mode  string
}

func readChildEnv() childEnv {
	dur := func(k string) time.Duration { d, _ := time.ParseDuration(os.Getenv(k)); return d }
	n, _ := strconv.Atoi(os.Getenv("LT_ITERS"))
	limit, _ := strconv.Atoi(os.Getenv("LT_LIMIT"))
	return childEnv{
		limit: limit, mode: os.Getenv("LT_MODE"),
		addr: os.Getenv("LT_ADDR"), store: os.Getenv("LT_STORE"), client: os.Getenv("LT_CLIENT"),
		key: os.Getenv("LT_KEY"), prefix: os.Getenv("LT_PREFIX"), iters: n,
		ttl: dur("LT_TTL"), wait: dur("LT_WAIT"), lease: dur("LT_LEASE"), renew: dur("LT_RENEW"), think: dur("LT_THINK"), pause: dur("LT_PAUSE"),
		window: dur("LT_WINDOW"), call: dur("LT_CALL_TIMEOUT"),
	}
}

// env returns the environment StartChild passes for e.
func (e childEnv) env() []string {
	return []string{
		"LT_ADDR=" + e.addr, "LT_STORE=" + e.store, "LT_CLIENT=" + e.client, "LT_KEY=" + e.key,
		"LT_PREFIX=" + e.prefix, "LT_ITERS=" + strconv.Itoa(e.iters),
		"LT_TTL=" + e.ttl.String(), "LT_WAIT=" + e.wait.String(), "LT_LEASE=" + e.lease.String(),
		"LT_RENEW=" + e.renew.String(), "LT_THINK=" + e.think.String(), "LT_PAUSE=" + e.pause.String(),
		"LT_LIMIT=" + strconv.Itoa(e.limit), "LT_MODE=" + e.mode, "LT_WINDOW=" + e.window.String(), "LT_CALL_TIMEOUT=" + e.call.String(),
	}
}

// modes are childEnv.mode's values.
var modes = map[string]locker.Mode{"": locker.Exclusive, "read": locker.Read, "write": locker.Write}

// params are the lock parameters of e's kind, TTL and wait.
func (e childEnv) params() locker.Params {
	return locker.Params{TTL: e.ttl, Wait: e.wait, Limit: e.limit, Mode: modes[e.mode]}
}

func (e childEnv) locker(extra ...locker.Option) *locker.Locker {
	pool := &redis.Pool{
		MaxIdle: 16,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", e.addr, redis.DialConnectTimeout(time.Second),
				redis.DialReadTimeout(5*time.Second), redis.DialWriteTimeout(5*time.Second))
		},
	}
	call := time.Second
	if e.call > 0 {
		call = e.call
	}
	opts := []locker.Option{locker.WithCallTimeout(call)}
	if e.lease > 0 {
		opts = append(opts, locker.WithWatchdog(e.lease, e.renew))
	}
	if e.prefix != "" {
		opts = append(opts, locker.WithKeyPrefix(e.prefix))
	}
	if e.window > 0 {
		opts = append(opts, locker.WithGrantWindow(e.window))
	}
	lk, err := locker.New(redigo.New(pool), append(opts, extra...)...)
	if err != nil {
		panic(err) // a child process: its parent sees the failure
	}
	return lk
}

var stdoutMu sync.Mutex

func say(format string, args ...any) {
	stdoutMu.Lock()
	defer stdoutMu.Unlock()
	fmt.Fprintf(os.Stdout, format+"\n", args...)
}

// childWorker runs a workload and prints its sections ("SEC ...") and error
// kinds ("ERR ..."), then "DONE". With LT_ITERS=0 it runs until its stdin
// closes or says "stop".
func childWorker() {
	e := readChildEnv()
	lk := e.locker()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "stop" {
				break
			}
		}
		cancel()
	}()
	w := work{client: e.client, key: e.key, iters: e.iters, params: locker.Params{TTL: e.ttl, Wait: e.wait}, think: e.think, pause: e.pause}
	say("READY")
	w.run(ctx, lk, newRemoteStore(e.store), func(s section) { say("%s", s) }, func(kind string) { say("ERR %s", kind) })
	say("DONE")
}

// childHolder takes the lock once and then obeys its stdin: it prints
// "HELD token" and "READ value"; on "write" it writes value+1 to the store
// with a context that ignores the lease (a careless holder) and prints
// "WROTE ok|stale|error", then waits up to three leases for the lease's
// context to end and prints "CAUSE" and its cause; on
// "release" it releases and prints "RELEASED" and the error (or "ok").
// Without a store (LT_STORE empty) it reads nothing and prints "READ -".
func childHolder() {
	e := readChildEnv()
	lk := e.locker()
	ctx := context.Background()
	le, err := lk.Obtain(ctx, e.key, e.params())
	if err != nil {
		say("FAILED %v", err)
		return
	}
	say("HELD %d", le.Token())
	st := newRemoteStore(e.store)
	var v int64
	if e.store == "" {
		say("READ -")
	} else if v, err = st.Read(ctx, e.key, le.Token()); err != nil {
		say("FAILED read: %v", err)
		return
	} else {
		say("READ %d", v)
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case "write":
			err := st.Write(ctx, e.key, le.Token(), v, v+1)
			switch {
			case err == nil:
				say("WROTE ok")
			case errors.Is(err, errStale):
				say("WROTE stale")
			default:
				say("WROTE error %v", err)
			}
			// The watchdog notices the loss on its next renewal, which
			// may land after the write: wait for it, bounded.
			select {
			case <-le.Context().Done():
			case <-time.After(3 * e.lease):
			}
			say("CAUSE %v", context.Cause(le.Context()))
		case "release":
			if err := le.Release(ctx); err != nil {
				say("RELEASED %v", err)
			} else {
				say("RELEASED ok")
			}
			return
		}
	}
}
