package locker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// floodLease is the flood's fixed lease, and floodGrace what a lock may
// keep after it: a read/write lock's details hash (the last writer's
// token) lives a second past its last take or renewal, a queue and its
// details a second past the longest wait queued.
const (
	floodLease = 3 * time.Second
	floodWait  = time.Second
	floodGrace = floodWait + time.Second
)

// TestFloodLeavesNothing: 20,000 distinct keys through one Locker —
// mutexes released, kept after release or left to run out, semaphore
// permits, read and write holds, multi-key locks, and keys with a waiter
// handed the lock — leave nothing in Redis once their leases and the
// bounded grace after them have passed: no fencing counter or any other
// key per lock name. Tokens still increase per key (the fencing tests);
// here every key is new, so each token comes from the server clock.
func TestFloodLeavesNothing(t *testing.T) {
	srv := redistest.Start(t)
	const prefix = "flood:"
	// The leases left to run out are reported lost: not worth a log line.
	lk := newLocker(t, srv, locker.WithKeyPrefix(prefix), locker.WithLogger(slog.New(slog.DiscardHandler)))
	ctx := context.Background()
	p := locker.Params{TTL: floodLease}

	// A lease that ran out before its Obtain returned or before its
	// release (a loaded machine) leaves the lock to expire by itself: one
	// more way for a lock to end, which the flood only counts.
	var ranOut atomic.Int64
	ended := func(err error) error {
		if errors.Is(err, locker.ErrGrantExpired) || errors.Is(err, locker.ErrNotHeld) {
			ranOut.Add(1)
			return nil
		}
		return err
	}
	type job func(i int) error
	release := func(le *locker.Lease, err error) error {
		if err != nil {
			return ended(err)
		}
		return ended(le.Release(ctx))
	}
	plan := []struct {
		n   int
		run job
	}{
		{14_000, func(i int) error { return release(lk.Obtain(ctx, fmt.Sprintf("m%d", i), p)) }},
		{1_000, func(i int) error { // kept for a while after release
			le, err := lk.Obtain(ctx, fmt.Sprintf("k%d", i), p)
			if err != nil {
				return ended(err)
			}
			return ended(le.ReleaseAfter(ctx, 200*time.Millisecond))
		}},
		{500, func(i int) error { // never released: the lease runs out
			_, err := lk.Obtain(ctx, fmt.Sprintf("x%d", i), p)
			return ended(err)
		}},
		{1_000, func(i int) error {
			return release(lk.Obtain(ctx, fmt.Sprintf("s%d", i), locker.Params{TTL: floodLease, Limit: 2}))
		}},
		{1_000, func(i int) error {
			return release(lk.Obtain(ctx, fmt.Sprintf("r%d", i), locker.Params{TTL: floodLease, Mode: locker.Read}))
		}},
		{1_000, func(i int) error {
			return release(lk.Obtain(ctx, fmt.Sprintf("w%d", i), locker.Params{TTL: floodLease, Mode: locker.Write}))
		}},
		{500, func(i int) error { // two keys each
			return release(lk.ObtainMany(ctx, []string{fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)}, p))
		}},
		{500, func(i int) error { return ended(handedOver(ctx, lk, fmt.Sprintf("q%d", i))) }},
	}
	keys := 0
	for _, s := range plan {
		keys += s.n
	}
	keys += 500 // the multi-key locks' second keys
	if keys != 20_000 {
		t.Fatalf("the plan floods %d keys", keys)
	}

	start := time.Now()
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				j := int(next.Add(1)) - 1
				var s int
				for s = 0; s < len(plan) && j >= plan[s].n; s++ {
					j -= plan[s].n
				}
				if s == len(plan) || failed.Load() != nil {
					return
				}
				if err := plan[s].run(j); err != nil {
					failed.CompareAndSwap(nil, fmt.Errorf("step %d, key %d: %w", s, j, err))
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	flooded := time.Now()
	t.Logf("flood of %d keys in %v (%d leases ran out first); %d Redis keys right after it",
		keys, flooded.Sub(start).Round(time.Millisecond), ranOut.Load(), len(leftover(t, srv, prefix)))

	if left := leftAfter(t, srv, prefix, floodLease+floodGrace); len(left) > 0 {
		t.Fatalf("%d keys left %v after the flood (lease %v + grace %v), e.g. %q",
			len(left), time.Since(flooded).Round(time.Millisecond), floodLease, floodGrace, left[:min(5, len(left))])
	}
	t.Logf("nothing left %v after the flood", time.Since(flooded).Round(time.Millisecond))
	if n, err := redis.Int(srv.Do("DBSIZE")); err != nil || n != 0 {
		t.Fatalf("DBSIZE %d (%v) after the flood, want 0", n, err)
	}

	// Control: a fencing counter left per key for an hour, as a lock once
	// left it, is found by the same check.
	for i := range 3 {
		if _, err := srv.Do("SET", fmt.Sprintf("%s{m%d}:f", prefix, i), 1795000000000000+i, "PX", time.Hour.Milliseconds()); err != nil {
			t.Fatal(err)
		}
	}
	if left := leftAfter(t, srv, prefix, 200*time.Millisecond); len(left) != 3 {
		t.Fatalf("control: the check found %q, want the 3 planted counters", left)
	}
}

// handedOver takes key, queues a second caller behind it and releases, so
// the lock is handed to the waiter (a queue and its details exist for a
// while), which then releases too.
func handedOver(ctx context.Context, lk *locker.Locker, key string) error {
	first, err := lk.Obtain(ctx, key, locker.Params{TTL: floodLease})
	if err != nil {
		return err
	}
	got := make(chan error, 1)
	go func() {
		le, err := lk.Obtain(ctx, key, locker.Params{TTL: floodLease, Wait: floodWait})
		if err == nil {
			err = le.Release(ctx)
		}
		got <- err
	}()
	// Release once the waiter has queued (or after half a lease: then the
	// lock is simply released).
	deadline := time.Now().Add(floodLease / 2)
	for time.Now().Before(deadline) {
		st, err := lk.Inspect(ctx, key)
		if err != nil {
			_ = first.Release(ctx)
			<-got
			return err
		}
		if len(st.Waiters) > 0 {
			break
		}
	}
	if err := first.Release(ctx); err != nil {
		<-got
		return err
	}
	if err := <-got; err != nil && !errors.Is(err, locker.ErrNotObtained) {
		return err
	}
	return nil
}

// leftAfter polls until no key under prefix is left or within has passed,
// and returns the keys left.
func leftAfter(t *testing.T, srv *redistest.Server, prefix string, within time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := leftover(t, srv, prefix)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leftover SCANs the keys under prefix.
func leftover(t *testing.T, srv *redistest.Server, prefix string) []string {
	t.Helper()
	var keys []string
	cursor := "0"
	for {
		v, err := redis.Values(srv.Do("SCAN", cursor, "MATCH", prefix+"*", "COUNT", 1000))
		if err != nil {
			t.Fatal(err)
		}
		cursor, _ = redis.String(v[0], nil)
		page, _ := redis.Strings(v[1], nil)
		keys = append(keys, page...)
		if cursor == "0" {
			return keys
		}
	}
}
