package reliability

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/reliability/faults"
	"github.com/locktag/locktag/locker"
)

// childWaiters starts LT_ITERS waiters on LT_KEY at once (TTL LT_TTL, wait
// LT_WAIT); each prints "GOT" when it obtains the lock and releases it, or
// "FAILED" and the error.
func childWaiters() {
	e := readChildEnv()
	lk := e.locker()
	ctx := context.Background()
	var wg sync.WaitGroup
	for range e.iters {
		wg.Go(func() {
			le, err := lk.Obtain(ctx, e.key, locker.Params{TTL: e.ttl, Wait: e.wait})
			if err != nil {
				say("FAILED %v", err)
				return
			}
			say("GOT %d", le.Token())
			_ = le.Release(ctx)
		})
	}
	wg.Wait()
	say("DONE")
}

// TestPausedWaitersCutOff: a process with five waiters queued first is
// frozen (SIGSTOP) when the holder releases. The lock is handed to its first
// waiter for one grant window; then the next live waiter, in another
// process, gets it — timed by the grant's notice, not by the previous
// holder's 30s lease — and the frozen process's other four entries are cut
// off instead of being granted one after another. After SIGCONT the frozen
// process's waiters find out, queue again, and all get the lock.
func TestPausedWaitersCutOff(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	const key = "paused-waiters"
	msgs := srv.Messages(t, "locktag:{"+key+"}:c")
	lk := newLocker(t, srv.Pool(t))
	holder, err := lk.Obtain(ctx, key, locker.Params{}) // watchdog: a 30s lease
	if err != nil {
		t.Fatal(err)
	}
	queued := func(n int) func() bool {
		return func() bool {
			c, _ := redis.Int(srv.Do("ZCARD", "locktag:{"+key+"}:q"))
			return c == n
		}
	}
	ch := faults.StartChild(t, "waiters", childEnv{addr: srv.Addr(), key: key, iters: 5,
		ttl: 5 * time.Second, wait: time.Minute}.env()...)
	eventually(t, 30*time.Second, "the child's five waiters queued", queued(5))

	got := make(chan *locker.Lease, 1)
	go func() {
		le, err := newLocker(t, srv.Pool(t)).Obtain(ctx, key, locker.Params{Wait: 20 * time.Second})
		if err != nil {
			t.Error(err)
		}
		got <- le
	}()
	eventually(t, 10*time.Second, "the live waiter queued behind them", queued(6))

	ch.Stop()
	released := time.Now()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	le := within(t, 15*time.Second, "the live waiter obtained past the frozen process", got)
	if le == nil {
		t.FailNow()
	}
	t.Logf("live waiter obtained %v after the release", time.Since(released).Round(time.Millisecond))
	owner := owner(t, srv, key)
	var frozen []string
	for _, m := range msgs() {
		if f := strings.Fields(m); len(f) == 4 && f[0] != owner { // a grant: token fence server_ms lease_ms
			frozen = append(frozen, f[0])
		}
	}
	if len(frozen) != 1 {
		t.Fatalf("grants to the frozen process's waiters: %d, want 1 (its other entries cut off)", len(frozen))
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}

	ch.Cont()
	for range 5 {
		if line, _ := ch.Next(30 * time.Second); !strings.HasPrefix(line, "GOT") {
			t.Fatalf("a resumed waiter: %q, want GOT", line)
		}
	}
	ch.Expect("DONE", 10*time.Second)
}
