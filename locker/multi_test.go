package locker_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

func mustObtainMany(t *testing.T, lk *locker.Locker, ctx context.Context, keys []string, p locker.Params) *locker.Lease {
	t.Helper()
	le, err := lk.ObtainMany(ctx, keys, p)
	if err != nil {
		t.Fatalf("ObtainMany(%q): %v", keys, err)
	}
	return le
}

// TestObtainManyHoldsEveryKey: every key is a held mutex, excluding Obtain
// of that key, with a fence of its own; Release frees them all.
func TestObtainManyHoldsEveryKey(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	le := mustObtainMany(t, lk, ctx, []string{"acct:2", "acct:1"}, locker.Params{})
	if got := strings.Join(le.Keys(), " "); got != "acct:1 acct:2" {
		t.Fatalf("Keys = %q, want sorted", got)
	}
	for _, k := range []string{"acct:1", "acct:2"} {
		if owner, holds := lockState(t, srv, k); owner == "" || holds != 1 {
			t.Fatalf("%s: owner %q holds %d", k, owner, holds)
		}
		if _, err := lk.Obtain(ctx, k, locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
			t.Fatalf("Obtain(%s) while multi-held: %v", k, err)
		}
		if le.TokenOf(k) <= 0 {
			t.Fatalf("TokenOf(%s) = %d", k, le.TokenOf(k))
		}
	}
	if le.TokenOf("acct:3") != 0 || le.Token() != le.TokenOf("acct:1") {
		t.Fatalf("Token %d, TokenOf(acct:1) %d, TokenOf(acct:3) %d", le.Token(), le.TokenOf("acct:1"), le.TokenOf("acct:3"))
	}
	if d, err := le.TTL(ctx); err != nil || d <= 0 {
		t.Fatalf("TTL = %v, %v", d, err)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := le.Context().Err(); err == nil {
		t.Fatal("context alive after Release")
	}
	for _, k := range []string{"acct:1", "acct:2"} {
		if owner, _ := lockState(t, srv, k); owner != "" {
			t.Fatalf("%s still held after Release", k)
		}
	}
	if err := le.Release(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("second Release: %v", err)
	}
}

// TestObtainManySameKey: duplicates collapse, a transfer to the same
// account takes one lock.
func TestObtainManySameKey(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	le := mustObtainMany(t, lk, ctx, []string{"acct:1", "acct:1"}, locker.Params{})
	defer le.Release(ctx)
	if got := le.Keys(); len(got) != 1 || got[0] != "acct:1" {
		t.Fatalf("Keys = %q", got)
	}
	if _, holds := lockState(t, srv, "acct:1"); holds != 1 {
		t.Fatalf("holds = %d, want 1", holds)
	}
}

// TestObtainManyAllOrNothing: while one key is held elsewhere, a
// multi-key request that fails (no wait, or a short one) holds none of its
// keys afterwards, in Redis, and leaves no queue entry.
func TestObtainManyAllOrNothing(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	other := newLocker(t, srv)
	ctx := context.Background()
	for _, wait := range []time.Duration{0, 50 * time.Millisecond} {
		for _, busy := range []string{"a", "b", "c"} {
			held := mustObtain(t, other, ctx, busy, locker.Params{})
			_, err := lk.ObtainMany(ctx, []string{"c", "b", "a"}, locker.Params{Wait: wait})
			if !errors.Is(err, locker.ErrNotObtained) {
				t.Fatalf("wait %v, %s busy: %v", wait, busy, err)
			}
			for _, k := range []string{"a", "b", "c"} {
				owner, _ := lockState(t, srv, k)
				if k == busy {
					heldOwner, _ := lockState(t, srv, busy)
					if owner != heldOwner || owner == "" {
						t.Fatalf("the other holder lost %s", k)
					}
					continue
				}
				if owner != "" {
					t.Fatalf("wait %v, %s busy: %s still held after a failed ObtainMany", wait, busy, k)
				}
				if n := queueLen(t, srv, k); n != 0 {
					t.Fatalf("%s: %d queued", k, n)
				}
			}
			if err := held.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestObtainManyOppositeOrders: requests that name the same keys in
// opposite orders, with a wait, all succeed: no deadlock. Chaining two
// Obtain calls in opposite orders is the control: it deadlocks until the
// waits run out.
func TestObtainManyOppositeOrders(t *testing.T) {
	srv := redistest.Start(t)
	lks := []*locker.Locker{newLocker(t, srv), newLocker(t, srv)}
	ctx := context.Background()
	run := func(take func(lk *locker.Locker, keys []string) (func(), error)) (failed int) {
		var wg sync.WaitGroup
		var fails atomic.Int32
		for i := range 8 {
			keys := []string{"x", "y"}
			if i%2 == 1 {
				keys = []string{"y", "x"}
			}
			wg.Go(func() {
				for range 10 {
					release, err := take(lks[i%2], keys)
					if err != nil {
						fails.Add(1)
						return
					}
					time.Sleep(time.Millisecond) // the work, while holding both
					release()
				}
			})
		}
		wg.Wait()
		return int(fails.Load())
	}
	p := locker.Params{Wait: time.Minute}
	start := time.Now()
	if n := run(func(lk *locker.Locker, keys []string) (func(), error) {
		le, err := lk.ObtainMany(ctx, keys, p)
		if err != nil {
			return nil, err
		}
		return func() { _ = le.Release(ctx) }, nil
	}); n != 0 {
		t.Fatalf("%d ObtainMany calls failed", n)
	}
	t.Logf("160 multi-key sections in %v", time.Since(start))

	// Control: two Obtain calls in the caller's order deadlock.
	short := locker.Params{Wait: 300 * time.Millisecond}
	if n := run(func(lk *locker.Locker, keys []string) (func(), error) {
		a, err := lk.Obtain(ctx, keys[0], short)
		if err != nil {
			return nil, err
		}
		time.Sleep(5 * time.Millisecond) // widen the window both hold their first
		b, err := lk.Obtain(ctx, keys[1], short)
		if err != nil {
			_ = a.Release(ctx)
			return nil, err
		}
		return func() { _ = b.Release(ctx); _ = a.Release(ctx) }, nil
	}); n == 0 {
		t.Fatal("control: chained Obtain in opposite orders never timed out; the test cannot tell a deadlock")
	}
}

// TestObtainManyReentry: a nested Obtain of one of the keys, or a nested
// ObtainMany of them, re-enters through the multi-key lease's context.
func TestObtainManyReentry(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	outer := mustObtainMany(t, lk, ctx, []string{"a", "b"}, locker.Params{})
	inner := mustObtain(t, lk, outer.Context(), "b", locker.Params{})
	if inner.Holds() != 2 {
		t.Fatalf("nested Obtain holds %d, want 2", inner.Holds())
	}
	both := mustObtainMany(t, lk, inner.Context(), []string{"b", "a", "c"}, locker.Params{})
	if _, holds := lockState(t, srv, "b"); holds != 3 {
		t.Fatalf("b holds %d, want 3", holds)
	}
	if _, holds := lockState(t, srv, "c"); holds != 1 {
		t.Fatalf("c holds %d, want 1", holds)
	}
	for _, le := range []*locker.Lease{both, inner} {
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if owner, _ := lockState(t, srv, "c"); owner != "" {
		t.Fatal("c held after the nested release")
	}
	if _, holds := lockState(t, srv, "a"); holds != 1 {
		t.Fatalf("a holds %d after the nested releases, want 1", holds)
	}
	if err := outer.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if owner, _ := lockState(t, srv, "a"); owner != "" {
		t.Fatal("a held after the last release")
	}
}
