package locker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

func mustClaim(t *testing.T, lk *locker.Locker, name, fp string, p locker.IdempotencyParams) *locker.Claim {
	t.Helper()
	c, err := lk.Idempotent(context.Background(), name, fp, p)
	if err != nil {
		t.Fatalf("Idempotent(%q): %v", name, err)
	}
	if _, replay := c.Replay(); replay {
		t.Fatalf("Idempotent(%q): a replay, want a held claim", name)
	}
	return c
}

func wantReplay(t *testing.T, c *locker.Claim, err error, want string) {
	t.Helper()
	if err != nil {
		t.Fatalf("Idempotent: %v, want a replay", err)
	}
	out, ok := c.Replay()
	if !ok || string(out) != want {
		t.Fatalf("Replay() = %q, %v; want %q, true", out, ok, want)
	}
}

func TestIdempotentLifecycle(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	p := locker.IdempotencyParams{TTL: time.Minute}

	c := mustClaim(t, lk, "r1", "fp", p)
	if _, err := lk.Idempotent(ctx, "r1", "fp", p); !errors.Is(err, locker.ErrInFlight) {
		t.Fatalf("duplicate in flight: %v, want ErrInFlight", err)
	}
	if _, err := lk.Idempotent(ctx, "r1", "other", p); !errors.Is(err, locker.ErrMismatch) {
		t.Fatalf("other fingerprint in flight: %v, want ErrMismatch", err)
	}
	outcome := "\x00binary \xff outcome\r\n"
	if err := c.Complete(ctx, []byte(outcome)); err != nil {
		t.Fatal(err)
	}
	if err := c.Abandon(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("Abandon after Complete: %v, want ErrNotHeld", err)
	}
	if cause := context.Cause(c.Context()); !errors.Is(cause, locker.ErrNotHeld) {
		t.Fatalf("claim context cause after Complete: %v", cause)
	}
	r, err := lk.Idempotent(ctx, "r1", "fp", p)
	wantReplay(t, r, err, outcome)
	if err := r.Complete(ctx, nil); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("Complete of a replay: %v, want ErrNotHeld", err)
	}
	if _, err := lk.Idempotent(ctx, "r1", "other", p); !errors.Is(err, locker.ErrMismatch) {
		t.Fatalf("other fingerprint when done: %v, want ErrMismatch", err)
	}
	// The record expires with the TTL; no waiter set was made.
	if ttl := intReply(t, srv, "PTTL", "locktag:{r1}:r"); ttl <= 50_000 || ttl > 60_000 {
		t.Fatalf("record PTTL %d, want about 60000", ttl)
	}
	if n := intReply(t, srv, "EXISTS", "locktag:{r1}:rw"); n != 0 {
		t.Fatal("waiter set exists without waiters")
	}
	if _, err := lk.Idempotent(ctx, "", "fp", p); !errors.Is(err, locker.ErrEmptyKey) {
		t.Fatalf("empty name: %v", err)
	}
}

func TestIdempotentDefaultTTL(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	c := mustClaim(t, lk, "d", "fp", locker.IdempotencyParams{})
	if ttl := intReply(t, srv, "PTTL", "locktag:{d}:r"); ttl <= 0 || ttl > 30_000 {
		t.Fatalf("in-flight PTTL %d, want the 30s watchdog lease", ttl)
	}
	if err := c.Complete(context.Background(), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if ttl := intReply(t, srv, "PTTL", "locktag:{d}:r"); ttl <= int64(23*time.Hour/time.Millisecond) {
		t.Fatalf("record PTTL %dms, want about 24h", ttl)
	}
}

func TestIdempotentAbandonFreesKey(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	c := mustClaim(t, lk, "a", "fp", locker.IdempotencyParams{})
	if err := c.Abandon(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Complete(ctx, []byte("late")); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("Complete after Abandon: %v, want ErrNotHeld", err)
	}
	// A retry, even with another fingerprint, starts afresh.
	mustClaim(t, lk, "a", "fp2", locker.IdempotencyParams{})
}

// flaky is a Driver whose scripts fail while down is set: a process cut
// off from Redis, or a crashed one that no longer renews anything.
type flaky struct {
	driver.Driver
	down atomic.Bool
}

func (f *flaky) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	if f.down.Load() {
		return nil, errors.New("flaky: connection refused")
	}
	return f.Driver.Eval(ctx, s, keys, args...)
}

// TestIdempotentLeaseExpiry: a claimer that stops renewing (crashed or cut
// off) loses the key after one lease; a retry then executes; the first
// claimer's late Complete is refused and does not overwrite the new claim.
func TestIdempotentLeaseExpiry(t *testing.T) {
	srv := redistest.Start(t)
	f := &flaky{Driver: redigo.New(srv.Pool(t))}
	first := newLockerOn(t, f)
	other := newLocker(t, srv)
	ctx := context.Background()
	p := locker.IdempotencyParams{Lease: 300 * time.Millisecond}

	old := mustClaim(t, first, "crash", "fp", p)
	f.down.Store(true)
	if _, err := other.Idempotent(ctx, "crash", "fp", p); !errors.Is(err, locker.ErrInFlight) {
		t.Fatalf("while the lease runs: %v, want ErrInFlight", err)
	}
	eventually(t, 5*time.Second, "the first claim lost", old.Lost)
	if cause := context.Cause(old.Context()); !errors.Is(cause, locker.ErrLockLost) {
		t.Fatalf("lost claim's context cause: %v", cause)
	}
	var retry *locker.Claim
	eventually(t, 5*time.Second, "the retry claims the key", func() bool {
		c, err := other.Idempotent(ctx, "crash", "fp", p)
		retry = c
		return err == nil
	})
	f.down.Store(false)
	if err := old.Complete(ctx, []byte("stale")); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("late Complete: %v, want ErrNotHeld", err)
	}
	if err := retry.Complete(ctx, []byte("fresh")); err != nil {
		t.Fatal(err)
	}
	r, err := first.Idempotent(ctx, "crash", "fp", p)
	wantReplay(t, r, err, "fresh")
}

// TestIdempotentRenewal: a claim held for several leases keeps the key.
func TestIdempotentRenewal(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	// Three leases long, renewed every third of one; a lease of 300ms
	// leaves a loaded machine room for a late renewal.
	p := locker.IdempotencyParams{Lease: 300 * time.Millisecond}
	c := mustClaim(t, lk, "long", "fp", p)
	start := time.Now()
	for time.Since(start) < 900*time.Millisecond {
		if _, err := lk.Idempotent(ctx, "long", "fp", p); !errors.Is(err, locker.ErrInFlight) {
			t.Fatalf("after %v: %v, want ErrInFlight", time.Since(start), err)
		}
		time.Sleep(20 * time.Millisecond) // pacing, not synchronisation
	}
	if c.Lost() {
		t.Fatal("renewed claim lost")
	}
	if err := c.Complete(ctx, []byte("ok")); err != nil {
		t.Fatal(err)
	}
}

// waitingOn polls until n callers are registered as waiters for name.
func waitingOn(t *testing.T, srv *redistest.Server, name string, n int64) {
	t.Helper()
	eventually(t, 5*time.Second, "waiters registered", func() bool {
		m, _ := redis.Int64(srv.Do("SCARD", "locktag:{"+name+"}:rw"))
		return m == n
	})
}
