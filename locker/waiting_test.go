package locker_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// TestSubscriberConnectionKilled: when the shared subscriber connection
// dies, waiters re-subscribe and re-check instead of hanging until the
// holder's lease runs out.
func TestSubscriberConnectionKilled(t *testing.T) {
	srv := redistest.Start(t)
	// One pipelined connection, dialled before the baseline: the goroutine
	// count then moves only with the locker's own goroutines (a second
	// connection is dialled when first needed).
	holder, waiter := newPipelined(t, srv, 1), newPipelined(t, srv, 1)
	ctx := context.Background()
	le := mustObtain(t, holder, ctx, "pk", locker.Params{TTL: time.Minute})
	got := make(chan error, 1)
	go func() {
		w, err := waiter.Obtain(ctx, "pk", locker.Params{Wait: 30 * time.Second})
		if err == nil {
			err = w.Release(ctx)
		}
		got <- err
	}()
	numsub := func() int {
		n, _ := redis.Values(srv.Do("PUBSUB", "NUMSUB", "locktag:{pk}:c"))
		c, _ := redis.Int(n[1], nil)
		return c
	}
	eventually(t, 5*time.Second, "waiter subscribed", func() bool { return numsub() == 1 })
	if n, err := redis.Int(srv.Do("CLIENT", "KILL", "TYPE", "pubsub")); err != nil || n == 0 {
		t.Fatalf("CLIENT KILL: %d %v", n, err)
	}
	// Wait until the waiter has subscribed again on a new connection.
	eventually(t, 5*time.Second, "re-subscribed", func() bool { return numsub() == 1 })
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not woken after its subscriber connection was killed")
	}
}

// TestCancellationStorm: waiters cancelled at random points, racing with
// hand-overs, never break mutual exclusion and leave nothing behind; with
// pooled calls and with pipelined ones (where a caller leaving mid-call must
// not disturb the callers sharing its connection).
func TestCancellationStorm(t *testing.T) {
	for _, pipe := range []int{0, 1} {
		t.Run(fmt.Sprintf("pipelining=%d", pipe), func(t *testing.T) { cancellationStorm(t, pipe) })
	}
}

func cancellationStorm(t *testing.T, pipe int) {
	srv := redistest.Start(t)
	lockers := []*locker.Locker{
		newPipelined(t, srv, pipe, locker.WithUnsubscribeDelay(0)),
		newPipelined(t, srv, pipe, locker.WithUnsubscribeDelay(0)),
	}
	for _, lk := range lockers {
		warmListener(t, lk)
	}
	base := runtime.NumGoroutine()
	var holders, peak atomic.Int32
	var obtained, cancelled atomic.Int64
	var wg sync.WaitGroup
	for w := range 32 {
		lk := lockers[w%2]
		wg.Go(func() {
			for i := range 40 {
				// Every other call is cancelled at a random point of its
				// acquire or wait; the rest wait for their turn, so hand-overs
				// keep racing with cancellations however slow the machine is.
				limit := time.Minute
				if i%2 == 1 {
					limit = time.Duration(rand.IntN(3000)) * time.Microsecond
				}
				ctx, cancel := context.WithTimeout(context.Background(), limit)
				le, err := lk.Obtain(ctx, "storm", locker.Params{TTL: 10 * time.Second, Wait: time.Minute})
				if err != nil {
					cancel()
					if !errors.Is(err, locker.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("unexpected error: %v", err)
						return
					}
					cancelled.Add(1)
					continue
				}
				obtained.Add(1)
				h := holders.Add(1)
				for p := peak.Load(); h > p && !peak.CompareAndSwap(p, h); p = peak.Load() {
				}
				holders.Add(-1)
				if err := le.Release(context.Background()); err != nil {
					t.Errorf("release: %v", err)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	t.Logf("obtained %d, cancelled %d", obtained.Load(), cancelled.Load())
	if peak.Load() > 1 {
		t.Fatalf("%d holders at once", peak.Load())
	}
	if obtained.Load() == 0 || cancelled.Load() == 0 {
		t.Fatalf("storm did not exercise both paths: obtained %d, cancelled %d", obtained.Load(), cancelled.Load())
	}
	// An acquire whose reply was lost to the deadline may run after the
	// first clean-up; the second, a call timeout later, removes it.
	eventually(t, 5*time.Second, "nothing left behind", func() bool {
		return intReply(t, srv, "EXISTS", "locktag:{storm}", "locktag:{storm}:q") == 0
	})
	goroutinesSettle(t, base)
}
