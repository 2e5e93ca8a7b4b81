package reliability

import (
	"context"
	"slices"
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
// LT_WAIT, the kind LT_LIMIT or LT_MODE); each prints "GOT" when it obtains the lock and releases it, or
// "FAILED" and the error.
func childWaiters() {
	e := readChildEnv()
	lk := e.locker()
	ctx := context.Background()
	var wg sync.WaitGroup
	for range e.iters {
		wg.Go(func() {
			le, err := lk.Obtain(ctx, e.key, e.params())
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
// frozen (SIGSTOP) when the holder releases, for every lock kind. The lock
// (a mutex, a semaphore's permits, a write hold, a batch of read holds) is
// handed to the frozen process's first waiters for one grant window; then
// the next live waiter, in another process, gets it — timed by the grant's
// notice, not by the previous holder's 30s lease — and the frozen
// process's other entries are cut off instead of being granted one after
// another. After SIGCONT the frozen process's waiters find out, queue
// again, and all get the lock.
func TestPausedWaitersCutOff(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name   string
		suffix string // the kind's keys: locktag:{key}<suffix>
		child  childEnv
		holder locker.Params // taken holds times by the parent first
		holds  int
		live   locker.Params
		// Grants to the frozen waiters: those made before the live
		// waiter's re-check; the rest are cut off.
		frozenGrants int
	}{
		{"mutex", "", childEnv{}, locker.Params{}, 1, locker.Params{}, 1},
		{"semaphore", ":s", childEnv{limit: 2}, locker.Params{Limit: 2}, 2, locker.Params{Limit: 2}, 2},
		{"write", ":rw", childEnv{mode: "write"}, locker.Params{Mode: locker.Write}, 1, locker.Params{Mode: locker.Read}, 1},
		// Queued readers are admitted together: five grants, one window.
		{"read", ":rw", childEnv{mode: "read"}, locker.Params{Mode: locker.Write}, 1, locker.Params{Mode: locker.Write}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			key := "paused-waiters-" + tc.name
			base := "locktag:{" + key + "}" + tc.suffix
			msgs := srv.Messages(t, base+":c")
			lk := newLocker(t, srv.Pool(t))
			var holders []*locker.Lease
			for range tc.holds {
				le, err := lk.Obtain(ctx, key, tc.holder) // watchdog: a 30s lease
				if err != nil {
					t.Fatal(err)
				}
				holders = append(holders, le)
			}
			queued := func(n int) func() bool {
				return func() bool {
					c, _ := redis.Int(srv.Do("ZCARD", base+":q"))
					return c == n
				}
			}
			e := tc.child
			e.addr, e.key, e.iters, e.ttl, e.wait = srv.Addr(), key, 5, 5*time.Second, time.Minute
			ch := faults.StartChild(t, "waiters", e.env()...)
			eventually(t, 30*time.Second, "the child's five waiters queued", queued(5))

			got := make(chan *locker.Lease, 1)
			go func() {
				p := tc.live
				p.Wait = 20 * time.Second
				le, err := newLocker(t, srv.Pool(t)).Obtain(ctx, key, p)
				if err != nil {
					t.Error(err)
				}
				got <- le
			}()
			eventually(t, 10*time.Second, "the live waiter queued behind them", queued(6))

			ch.Stop()
			released := time.Now()
			for _, h := range holders {
				if err := h.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			le := within(t, 15*time.Second, "the live waiter obtained past the frozen process", got)
			if le == nil {
				t.FailNow()
			}
			t.Logf("live waiter obtained %v after the release", time.Since(released).Round(time.Millisecond))
			live := holderTokens(t, srv, key, tc.suffix)
			var frozen []string
			for _, m := range msgs() {
				if f := strings.Fields(m); len(f) == 4 && !slices.Contains(live, f[0]) { // a grant: token fence server_ms lease_ms
					frozen = append(frozen, f[0])
				}
			}
			if len(frozen) != tc.frozenGrants {
				t.Fatalf("grants to the frozen process's waiters: %d, want %d (its other entries cut off)", len(frozen), tc.frozenGrants)
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
		})
	}
}
