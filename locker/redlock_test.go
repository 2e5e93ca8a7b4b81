package locker_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

func newRedlock(t *testing.T, srvs []*redistest.Server, opts ...locker.Option) *locker.Locker {
	t.Helper()
	return newRedlockPiped(t, srvs, 0, opts...)
}

// newRedlockPiped is newRedlock with each master's redigo driver pipelining
// over conns connections (0: pooled calls).
func newRedlockPiped(t *testing.T, srvs []*redistest.Server, conns int, opts ...locker.Option) *locker.Locker {
	t.Helper()
	pools := make([]*redis.Pool, len(srvs))
	for i, s := range srvs {
		pools[i] = s.Pool(t)
	}
	return newRedlockOn(t, pools, []redigo.Option{redigo.WithPipelining(conns)}, opts...)
}

// newRedlockOn returns a Redlock Locker over pools, each master's redigo
// driver built with dopts, closed at the test's end.
func newRedlockOn(t testing.TB, pools []*redis.Pool, dopts []redigo.Option, opts ...locker.Option) *locker.Locker {
	t.Helper()
	ds := make([]driver.Driver, len(pools))
	for i, p := range pools {
		ds[i] = redigo.New(p, dopts...)
	}
	lk, err := locker.NewRedlock(ds, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// keyOn counts the masters that hold the lock key.
func keyOn(t *testing.T, srvs []*redistest.Server, key string) int {
	t.Helper()
	n := 0
	for _, s := range srvs {
		if !s.Running() {
			continue
		}
		if v, _ := redis.Int(s.Do("EXISTS", "locktag:{"+key+"}")); v == 1 {
			n++
		}
	}
	return n
}

func TestRedlockBasics(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	a, b := newRedlock(t, srvs), newRedlock(t, srvs)
	ctx := context.Background()

	le := mustObtain(t, a, ctx, "r", locker.Params{TTL: 10 * time.Second})
	if got := keyOn(t, srvs, "r"); got != 5 {
		t.Fatalf("lock on %d of 5 masters", got)
	}
	if _, err := b.Obtain(ctx, "r", locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("busy: %v", err)
	}
	if ttl, err := le.TTL(ctx); err != nil || ttl < 9*time.Second {
		t.Fatalf("TTL %v %v", ttl, err)
	}
	inner := mustObtain(t, a, le.Context(), "r", locker.Params{})
	if inner.Holds() != 2 || inner.Token() != le.Token() {
		t.Fatalf("re-entry: holds %d token %d/%d", inner.Holds(), inner.Token(), le.Token())
	}
	for _, l := range []*locker.Lease{inner, le} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := keyOn(t, srvs, "r"); got != 0 {
		t.Fatalf("lock left on %d masters after release", got)
	}
	if err := le.Release(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("second release: %v", err)
	}
}

func TestRedlockQuorum(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	lk := newRedlock(t, srvs)
	ctx := context.Background()
	for down := 1; down <= 3; down++ {
		srvs[down-1].Stop()
		key := fmt.Sprintf("q%d", down)
		start := time.Now()
		le, err := lk.Obtain(ctx, key, locker.Params{TTL: 10 * time.Second, Wait: 5 * time.Second})
		if down < 3 {
			if err != nil {
				t.Fatalf("%d of 5 down: %v", down, err)
			}
			if err := le.Release(ctx); err != nil {
				t.Fatalf("%d of 5 down: release: %v", down, err)
			}
			continue
		}
		var qe *locker.QuorumError
		if !errors.As(err, &qe) || !errors.Is(err, locker.ErrQuorum) || !errors.Is(err, locker.ErrUnavailable) {
			t.Fatalf("3 of 5 down: %v, want a QuorumError", err)
		}
		failed := 0
		for _, e := range qe.Errs {
			if e != nil {
				failed++
			}
		}
		if failed != 3 || qe.OK != 2 || qe.Need != 3 {
			t.Fatalf("quorum error %+v", qe)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("quorum failure took %v; it must not wait", d)
		}
		// The partial acquisitions are undone in the background: poll.
		eventually(t, 5*time.Second, "the failed obtain's keys undone on every live master", func() bool { return keyOn(t, srvs, key) == 0 })
	}
}

func TestRedlockMasterKilledWhileHeld(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	lk := newRedlock(t, srvs, locker.WithWatchdog(time.Second, 100*time.Millisecond))
	other := newRedlock(t, srvs)
	ctx := context.Background()
	le := mustObtain(t, lk, ctx, "k", locker.Params{})
	srvs[4].Stop()
	hold := time.After(2500 * time.Millisecond) // renewals on 4 of 5 keep it
	for done := false; !done; {
		select {
		case <-hold:
			done = true
		case <-le.Context().Done():
			t.Fatalf("lost with 4 of 5 masters up: %v", context.Cause(le.Context()))
		default:
			if _, err := other.Obtain(ctx, "k", locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
				t.Fatalf("contender: %v", err)
			}
			time.Sleep(20 * time.Millisecond) // contender pacing
		}
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRedlockLosesMajority(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	lk := newRedlock(t, srvs, locker.WithWatchdog(2*time.Second, 100*time.Millisecond))
	le := mustObtain(t, lk, context.Background(), "m", locker.Params{})
	for _, s := range srvs[:3] {
		if _, err := s.Do("DEL", "locktag:{m}"); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-le.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("not lost after the majority dropped the key")
	}
	if !errors.Is(context.Cause(le.Context()), locker.ErrLockLost) {
		t.Fatalf("cause %v", context.Cause(le.Context()))
	}
}

func TestRedlockSlowMasterSkipped(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	lk := newRedlock(t, srvs, locker.WithNodeTimeout(100*time.Millisecond))
	ctx := context.Background()
	mustObtain(t, lk, ctx, "warm", locker.Params{}).Release(ctx) // connections and scripts ready
	if _, err := srvs[0].Do("CLIENT", "PAUSE", 3000, "ALL"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	le := mustObtain(t, lk, ctx, "slow", locker.Params{TTL: 10 * time.Second})
	if d := time.Since(start); d > time.Second {
		t.Fatalf("obtain with a paused master took %v; per-master timeout 100ms", d)
	}
	_ = le.Release(ctx)
}

// TestRedlockFencing: tokens keep increasing when the majority changes and
// masters restart without persistence.
func TestRedlockFencing(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	lk := newRedlock(t, srvs)
	ctx := context.Background()
	var last int64
	step := func(what string) {
		t.Helper()
		le := mustObtain(t, lk, ctx, "f", locker.Params{TTL: time.Minute, Wait: 5 * time.Second})
		if le.Token() <= last {
			t.Fatalf("%s: token %d after %d", what, le.Token(), last)
		}
		last = le.Token()
		if err := le.Release(ctx); err != nil {
			t.Fatalf("%s: release: %v", what, err)
		}
	}
	step("all up")
	step("all up again")
	srvs[0].Stop()
	srvs[1].Stop()
	step("majority 2,3,4")
	srvs[0].Restart()
	srvs[1].Restart()
	srvs[2].Stop()
	srvs[3].Stop()
	step("majority 0,1,4 after 0,1 lost their data")
}

// TestRedlockFencingKeepsLastToken: a released Redlock lock stays on each
// master, moved aside with its token, until its lease would have ended,
// and nothing is left once that has passed. While it is there, a master
// mints a larger token even when its clock is behind that token: master 2
// is made to remember a token an hour ahead of the clocks (as if minted by
// a master whose clock ran ahead), and the next majority, which has only
// master 2 in common with it, settles on a larger one.
func TestRedlockFencingKeepsLastToken(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	// A per-master timeout a loaded machine cannot miss (the default is a
	// tenth of the lease).
	lk := newRedlock(t, srvs, locker.WithNodeTimeout(2*time.Second))
	ctx := context.Background()
	const ttl = 5 * time.Second
	le := mustObtain(t, lk, ctx, "k", locker.Params{TTL: ttl})
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for i, s := range srvs {
		kept, err := redis.String(s.Do("GET", "locktag:{k}:f"))
		pttl, _ := redis.Int64(s.Do("PTTL", "locktag:{k}:f"))
		if f := strings.Fields(kept); err != nil || len(f) < 2 || f[1] != strconv.FormatInt(le.Token(), 10) || pttl <= 0 || pttl > ttl.Milliseconds() {
			t.Fatalf("master %d keeps %q (%v) for %dms, want token %d for at most the lease", i, kept, err, pttl, le.Token())
		}
	}
	ahead := le.Token() + time.Hour.Microseconds()
	if _, err := srvs[2].Do("SET", "locktag:{k}:f", "gone "+strconv.FormatInt(ahead, 10)+" 1 0", "PX", ttl.Milliseconds()); err != nil {
		t.Fatal(err)
	}
	srvs[0].Stop()
	srvs[1].Stop()
	next := mustObtain(t, lk, ctx, "k", locker.Params{TTL: ttl})
	if next.Token() <= ahead {
		t.Fatalf("token %d after one of %d remembered by the majority", next.Token(), ahead)
	}
	if err := next.Release(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, ttl+5*time.Second, "nothing left a lease after the release", func() bool {
		for _, s := range srvs[2:] {
			if n, _ := redis.Int(s.Do("DBSIZE")); n != 0 {
				return false
			}
		}
		return true
	})
}

func TestRedlockWaitsByNotice(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	holder, waiter := newRedlock(t, srvs), newRedlock(t, srvs)
	ctx := context.Background()
	le := mustObtain(t, holder, ctx, "n", locker.Params{TTL: 30 * time.Second})
	got := make(chan time.Time, 1)
	go func() {
		w, err := waiter.Obtain(ctx, "n", locker.Params{Wait: 20 * time.Second})
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		got <- time.Now()
		_ = w.Release(ctx)
	}()
	// The waiter is subscribed on every master and has flagged the lock.
	eventually(t, 5*time.Second, "waiter flagged the lock", func() bool {
		for _, s := range srvs {
			v, _ := redis.String(s.Do("GET", "locktag:{n}"))
			// "owner fence holds queue granted ends from": queue is set.
			if f := strings.Fields(v); len(f) < 4 || f[3] == "0" {
				return false
			}
			subs, _ := redis.Values(s.Do("PUBSUB", "NUMSUB", "locktag:{n}:c"))
			if c, _ := redis.Int(subs[1], nil); c != 1 {
				return false
			}
		}
		return true
	})
	released := time.Now()
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	at, ok := <-got
	if !ok {
		t.FailNow()
	}
	// Woken by the notice, not by the 30s lease running out.
	if d := at.Sub(released); d > 5*time.Second {
		t.Fatalf("waiter took %v after the release", d)
	}
}

// TestRedlockMutualExclusion: three Redlock clients on the same five
// masters, one of them pipelining its calls, never overlap.
func TestRedlockMutualExclusion(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	var lockers []*locker.Locker
	for i := range 3 {
		lockers = append(lockers, newRedlockPiped(t, srvs, i/2))
	}
	peak, lost := workload(t, lockers, 24, 8)
	if peak != 1 || lost != 0 {
		t.Fatalf("Redlock mutual exclusion broken: %d holders at once, %d lost updates", peak, lost)
	}
}

func TestRedlockMutualExclusionControl(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	var lockers []*locker.Locker
	for i := range 3 {
		lockers = append(lockers, newRedlock(t, srvs, locker.WithKeyPrefix(fmt.Sprintf("broken%d:", i))))
	}
	peak, lost := workload(t, lockers, 24, 8)
	if peak < 2 || lost == 0 {
		t.Fatalf("detector missed a broken Redlock: %d holders at once, %d lost updates", peak, lost)
	}
}

// TestRedlockRefusesIdempotency: a Redlock Locker refuses idempotency
// records with ErrIdempotencyUnsupported, at construction of a guard
// (SupportsIdempotency) and per call, and never writes a record to one
// master (it used to keep them on master 0 only).
func TestRedlockRefusesIdempotency(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	lk := newRedlock(t, srvs)
	ctx := context.Background()
	err := lk.SupportsIdempotency()
	if !errors.Is(err, locker.ErrIdempotencyUnsupported) || !strings.Contains(err.Error(), "Redlock") {
		t.Fatalf("SupportsIdempotency on Redlock: %v, want ErrIdempotencyUnsupported naming Redlock", err)
	}
	for _, p := range []locker.IdempotencyParams{{}, {Wait: time.Second}} {
		c, err := lk.Idempotent(ctx, "pay-1", "fp", p)
		if c != nil || !errors.Is(err, locker.ErrIdempotencyUnsupported) {
			t.Fatalf("Idempotent on Redlock: %v, %v; want ErrIdempotencyUnsupported", c, err)
		}
	}
	for i, s := range srvs {
		if n, err := redis.Int(s.Do("DBSIZE")); err != nil || n != 0 {
			t.Fatalf("master %d holds %d keys (%v), want none", i, n, err)
		}
	}
	// A single-node Locker on master 0 supports it.
	single := newLocker(t, srvs[0])
	if err := single.SupportsIdempotency(); err != nil {
		t.Fatalf("SupportsIdempotency on one node: %v", err)
	}
}
