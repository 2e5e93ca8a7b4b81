package locker_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// TestNoDialStorm: 2,000 waiters in one process give up together on a pool
// configured as the README shows (MaxIdle 64, no MaxActive). With pooled
// calls, calls per node are bounded inside the Locker, so they reuse idle
// connections instead of dialling one each; pipelined (the default), they
// share the one connection. Every one of them reads as busy, none as Redis
// unavailable.
func TestNoDialStorm(t *testing.T) {
	for _, tc := range []struct {
		name     string
		conns    int
		maxDials int32
	}{
		{"pooled", 0, 64 + 2},   // 64 call slots, the subscriber connection and the reserved one
		{"pipelined", 1, 1 + 1}, // the pipelined connection and the subscriber one
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			ctx := context.Background()
			pool := srv.Pool(t)
			var dials atomic.Int32
			dial := pool.DialContext
			pool.DialContext = func(ctx context.Context) (redis.Conn, error) {
				dials.Add(1)
				return dial(ctx)
			}
			lk := newLockerOn(t, redigo.New(pool, redigo.WithPipelining(tc.conns)))
			holder := mustObtain(t, newLocker(t, srv), ctx, "storm", locker.Params{})
			defer func() { _ = holder.Release(ctx) }()
			const n = 2000
			var busy, unavailable atomic.Int32
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					_, err := lk.Obtain(ctx, "storm", locker.Params{Wait: 2 * time.Second})
					switch {
					case errors.Is(err, locker.ErrUnavailable):
						unavailable.Add(1)
					case errors.Is(err, locker.ErrNotObtained):
						busy.Add(1)
					default:
						t.Errorf("err = %v", err)
					}
				})
			}
			wg.Wait()
			t.Logf("%d waiters gave up: %d busy, %d unavailable, %d connections dialled", n, busy.Load(), unavailable.Load(), dials.Load())
			if unavailable.Load() != 0 {
				t.Fatalf("%d of %d waiters failed as unavailable while Redis was up", unavailable.Load(), n)
			}
			if d := dials.Load(); d > tc.maxDials {
				t.Fatalf("%d connections dialled, want at most %d", d, tc.maxDials)
			}
		})
	}
}

// commandUsec reads cmdstat_<cmd>'s calls and usec from INFO commandstats.
func commandUsec(t testing.TB, srv *redistest.Server, cmd string) (calls, usec int64) {
	t.Helper()
	info, err := redis.String(srv.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":"); ok {
			for _, f := range strings.Split(strings.TrimSpace(rest), ",") {
				k, v, _ := strings.Cut(f, "=")
				switch k {
				case "calls":
					calls, _ = strconv.ParseInt(v, 10, 64)
				case "usec":
					usec, _ = strconv.ParseInt(v, 10, 64)
				}
			}
		}
	}
	return calls, usec
}

// progress polls measure until it returns target, failing only when it
// stops changing for a while: on a loaded machine thousands of waiters
// take long to queue, but they keep queueing, so a wall-clock bound would
// fail a correct run while a stall still fails a broken one.
func progress(t *testing.T, what string, measure func() int64, target int64) {
	t.Helper()
	const stall = 30 * time.Second
	last, since := measure(), time.Now()
	for last != target {
		if time.Since(since) > stall {
			t.Fatalf("%s: no progress for %v (at %d)", what, stall, last)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not synchronising
		if v := measure(); v != last {
			last, since = v, time.Now()
		}
	}
}

// queueCosts queues n waiters behind a holder and reports Redis's own
// microseconds per script call when they all re-check (their subscriber
// connection is killed, so each asks Redis again) and when they all leave.
func queueCosts(t *testing.T, srv *redistest.Server, n int) (recheck, leave float64) {
	t.Helper()
	ctx := context.Background()
	key := fmt.Sprintf("cost%d", n)
	// Pooled calls: the figure is the scripts' own cost. Pipelined, a batch
	// of calls runs back to back and a call's microseconds drop with the
	// batch (leaves at 250 waiters measured 5.0-6.9 µs pipelined against
	// 6.5-8.8 pooled, the same at 4,000), which skews the ratio this test
	// reads without any change in the scripts.
	lk := newPipelined(t, srv, 0)
	holder := mustObtain(t, newLocker(t, srv), ctx, key, locker.Params{TTL: time.Minute})
	defer func() { _ = holder.Release(ctx) }()
	// Waiters come and go in batches, so that the calls in flight stay near
	// the call bound (WithMaxConcurrentCalls) however loaded the machine:
	// thousands at once would wait for call slots past the call timeout and
	// fail as unavailable, which is not what this test measures.
	const batch = 100
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	var wg sync.WaitGroup
	for start := 0; start < n; start += batch {
		wctx, cancel := context.WithCancel(ctx)
		cancels = append(cancels, cancel)
		for range min(batch, n-start) {
			wg.Go(func() { _, _ = lk.Obtain(wctx, key, locker.Params{TTL: time.Minute, Wait: time.Minute}) })
		}
		want := int64(min(start+batch, n))
		progress(t, "waiters queued", func() int64 { return min(queueLen(t, srv, key), want) }, want)
	}

	cost := func(what string, trigger func(), done func(calls int64) bool) float64 {
		if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
			t.Fatal(err)
		}
		trigger()
		progress(t, what, func() int64 {
			calls, _ := commandUsec(t, srv, "evalsha")
			if done(calls) {
				return -1
			}
			return calls
		}, -1)
		calls, usec := commandUsec(t, srv, "evalsha")
		return float64(usec) / float64(calls)
	}
	recheck = cost("re-checks", func() {
		if _, err := srv.Do("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
			t.Fatal(err)
		}
	}, func(calls int64) bool { return calls >= int64(n) })
	leave = cost("leaves", func() {
		for i, cancel := range cancels {
			cancel()
			left := int64(n - min((i+1)*batch, n))
			progress(t, "leaves", func() int64 { return max(queueLen(t, srv, key), left) }, left)
		}
	}, func(int64) bool { return queueLen(t, srv, key) == 0 })
	wg.Wait()
	return recheck, leave
}

// TestQueueCostScaling: what a waiter's re-check and leave cost Redis does
// not grow with the queue (every queue operation is O(log N)). Measured
// from Redis's own per-command statistics, not wall time; each figure is
// the lowest of its interleaved rounds, since a command's microseconds
// also count time the server spent descheduled on a loaded machine: the
// rounds go on (up to six) until the lowest figures pass. A queue read
// whole costs several times more per call at 4,000 waiters than at 250 in
// every round.
func TestQueueCostScaling(t *testing.T) {
	if testing.Short() {
		t.Skip("queues 4,000 waiters")
	}
	srv := redistest.Start(t)
	best := func(a, b float64) float64 {
		if a == 0 || b < a {
			return b
		}
		return a
	}
	// O(log N) operations on a 16 times longer queue, and a busier server's
	// caches, cost up to about twice as much per call on this machine kind;
	// a queue read whole costs 5x or more.
	const limit = 3.0
	var r250, l250, r4k, l4k float64
	rounds := 0
	for rounds < 6 && (rounds < 2 || r4k > limit*r250 || l4k > limit*l250) {
		r, l := queueCosts(t, srv, 250)
		r250, l250 = best(r250, r), best(l250, l)
		r, l = queueCosts(t, srv, 4000)
		r4k, l4k = best(r4k, r), best(l4k, l)
		rounds++
	}
	t.Logf("µs per script call, best of %d rounds: re-check %.1f at 250 waiters, %.1f at 4,000 (%.2fx); leave %.1f, %.1f (%.2fx)",
		rounds, r250, r4k, r4k/r250, l250, l4k, l4k/l250)
	if r4k > limit*r250 || l4k > limit*l250 {
		t.Fatalf("queue operations grow with the queue: re-check %.2fx, leave %.2fx from 250 to 4,000 waiters (want <= %gx)", r4k/r250, l4k/l250, limit)
	}
}
