package locker_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
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

// TestObtainManyLost: losing one key cancels the lease's context with
// ErrLockLost; Release then reports the lost key.
func TestObtainManyLost(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv, locker.WithWatchdog(3*time.Second, 200*time.Millisecond))
	ctx := context.Background()
	le := mustObtainMany(t, lk, ctx, []string{"a", "b"}, locker.Params{})
	lctx := le.Context()
	if _, err := srv.Do("DEL", "locktag:{b}"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "context cancelled", func() bool { return lctx.Err() != nil })
	if cause := context.Cause(lctx); !errors.Is(cause, locker.ErrLockLost) {
		t.Fatalf("cause %v", cause)
	}
	if !le.Lost() {
		t.Fatal("Lost = false")
	}
	if err := le.Release(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("Release: %v", err)
	}
	if owner, _ := lockState(t, srv, "a"); owner != "" {
		t.Fatal("a still held after Release")
	}
}

// TestObtainManyBadInput: empty keys, too many keys, a kind.
func TestObtainManyBadInput(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	many := make([]string, locker.MaxKeys+1)
	for i := range many {
		many[i] = strings.Repeat("k", i+1)
	}
	for _, c := range []struct {
		keys []string
		p    locker.Params
		want error
	}{
		{nil, locker.Params{}, locker.ErrEmptyKey},
		{[]string{"a", ""}, locker.Params{}, locker.ErrEmptyKey},
		{many, locker.Params{}, locker.ErrTooManyKeys},
		{[]string{"a", "b"}, locker.Params{Limit: 2}, locker.ErrKindUnsupported},
		{[]string{"a", "b"}, locker.Params{Mode: locker.Read}, locker.ErrKindUnsupported},
	} {
		if _, err := lk.ObtainMany(ctx, c.keys, c.p); !errors.Is(err, c.want) {
			t.Errorf("ObtainMany(%d keys, %+v): %v, want %v", len(c.keys), c.p, err, c.want)
		}
	}
}

// TestObtainManyKeep: ReleaseAfter keeps every key.
func TestObtainManyKeep(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	le := mustObtainMany(t, lk, ctx, []string{"a", "b"}, locker.Params{})
	if err := le.ReleaseAfter(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := lk.Obtain(ctx, k, locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
			t.Fatalf("%s obtained within the keep window: %v", k, err)
		}
	}
}

// TestObtainManyRedlock: on Redlock each key is taken by majority; a
// multi-key lock excludes Obtain of its keys and rolls back when one is
// busy.
func TestObtainManyRedlock(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	lk := newRedlock(t, srvs)
	other := newRedlock(t, srvs)
	ctx := context.Background()
	if err := lk.Supports(locker.Params{}); err != nil {
		t.Fatal(err)
	}
	le := mustObtainMany(t, lk, ctx, []string{"b", "a"}, locker.Params{})
	for _, k := range []string{"a", "b"} {
		if _, err := other.Obtain(ctx, k, locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
			t.Fatalf("Obtain(%s) while multi-held: %v", k, err)
		}
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	held := mustObtain(t, other, ctx, "b", locker.Params{})
	if _, err := lk.ObtainMany(ctx, []string{"b", "a"}, locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("ObtainMany with b busy: %v", err)
	}
	a := mustObtain(t, other, ctx, "a", locker.Params{}) // a was given back
	for _, le := range []*locker.Lease{a, held} {
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// scriptCalls is the number of scripts srv ran since the last RESETSTAT.
func scriptCalls(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	info, err := redis.String(srv.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatal(err)
	}
	return commandCalls(info, "evalsha") + commandCalls(info, "eval")
}

// TestObtainManyOneScript: on one server, free keys are taken in one
// script (one round trip), whatever their number; a busy key with no wait
// costs that one script too, and nothing is held. With a wait, a busy key
// sends the call key by key through the queues.
func TestObtainManyOneScript(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	le := mustObtainMany(t, lk, ctx, []string{"d", "c", "b", "a"}, locker.Params{})
	if n := scriptCalls(t, srv); n != 1 {
		t.Fatalf("ObtainMany of 4 free keys ran %d scripts, want 1", n)
	}
	// The locks it wrote are ordinary mutexes: reentry, fences, release.
	inner := mustObtain(t, lk, le.Context(), "c", locker.Params{})
	if inner.Holds() != 2 || inner.Token() != le.TokenOf("c") {
		t.Fatalf("nested: holds %d token %d, want 2 and %d", inner.Holds(), inner.Token(), le.TokenOf("c"))
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}

	busy := mustObtain(t, newLocker(t, srv), ctx, "c", locker.Params{})
	if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	if _, err := lk.ObtainMany(ctx, []string{"a", "b", "c", "d"}, locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("c busy, no wait: %v", err)
	}
	if n := scriptCalls(t, srv); n != 1 {
		t.Fatalf("a busy ObtainMany without wait ran %d scripts, want 1", n)
	}
	for _, k := range []string{"a", "b", "d"} {
		if owner, _ := lockState(t, srv, k); owner != "" {
			t.Fatalf("%s held after a busy ObtainMany", k)
		}
	}
	if err := busy.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestObtainManyQueuedFirst: a free key with a live waiter queued for it
// is not taken by the one-script path — the waiter comes first — and
// nothing else is taken either.
func TestObtainManyQueuedFirst(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	// A waiter of another process, queued on b with a minute to wait (as
	// acquire.lua writes it: score = arrival in µs; details "deadline_ms
	// ttl_ms sid"), behind a holder whose lease is over: the lock key
	// lives as long as its queue ("owner fence holds queue granted ends
	// from", see value.lua).
	now := time.Now()
	life := now.Add(time.Minute).UnixMilli()
	ended := strconv.FormatInt(now.Add(-time.Second).UnixMilli(), 10)
	if _, err := srv.Do("SET", "locktag:{b}", "gone-token 1 1 "+strconv.FormatInt(life, 10)+" "+ended+" "+ended+" -", "PXAT", life); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("ZADD", "locktag:{b}:q", now.UnixMicro(), "waiter-token"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("HSET", "locktag:{b}:w", "waiter-token", strconv.FormatInt(now.Add(time.Minute).UnixMilli(), 10)+" 30000 other"); err != nil {
		t.Fatal(err)
	}
	if _, err := lk.ObtainMany(ctx, []string{"a", "b"}, locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("ObtainMany past a queued waiter: %v", err)
	}
	for k, want := range map[string]string{"a": "", "b": "gone-token"} {
		if owner, _ := lockState(t, srv, k); owner != want {
			t.Fatalf("%s taken past the queue (owner %q)", k, owner)
		}
	}
}
