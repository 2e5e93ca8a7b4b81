package locktest

import (
	"context"
	"errors"
	"time"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
)

// Hold takes the lock named key (a mutex; see Key for a tag's name) as
// another process of the service would, and keeps it (a watchdog lease)
// until release is called or the test ends: the guarded handler's
// requests for key are busy (HTTP 409, gRPC Aborted) or wait. It fails
// the test when the lock is held already.
func (k *Kit) Hold(key string) (release func()) {
	k.t.Helper()
	// Not bounded by a deadline: the lease's context derives from this one
	// (its calls are bounded by the Locker's call timeout).
	le, err := k.other.Obtain(context.Background(), key, locker.Params{Name: "locktest"})
	if err != nil {
		k.t.Fatalf("locktest: Hold %q: %v", key, err)
	}
	return k.releaser([]*locker.Lease{le})
}

// HoldTag holds what a guard with tag takes for a request with values, as
// another process would, so that the guard refuses the request: the mutex
// of a `key` tag, every key of a `keys` tag, every permit of a `limit`
// tag (HTTP 429, gRPC ResourceExhausted), the write lock of a `mode` tag.
// A `rate` tag takes no lock: use ExhaustRate. It fails the test when the
// lock is held already.
func (k *Kit) HoldTag(tag string, values Values) (release func()) {
	k.t.Helper()
	spec, err := keyexpr.ParseTag(tag)
	if err != nil {
		k.t.Fatalf("locktest: %v", err)
	}
	if spec.Rate.N > 0 {
		k.t.Fatalf("locktest: HoldTag: tag `%s` is a rate limit, which takes no lock: use ExhaustRate", tag)
	}
	names, err := specKeys(spec, values)
	if err != nil {
		k.t.Fatalf("locktest: %v", err)
	}
	ctx := context.Background() // the leases' contexts derive from it
	p := locker.Params{Name: "locktest"}
	var held []*locker.Lease
	fail := func(err error) {
		k.releaser(held)()
		k.t.Fatalf("locktest: HoldTag `%s` %q: %v", tag, names, err)
	}
	if len(spec.Keys) > 0 {
		le, err := k.other.ObtainMany(ctx, names, p)
		if err != nil {
			fail(err)
		}
		return k.releaser([]*locker.Lease{le})
	}
	holders := 1
	if spec.Limit > 0 {
		p.Limit, holders = spec.Limit, spec.Limit
	}
	if spec.Mode != "" {
		p.Mode = locker.Write // keeps readers and writers out
	}
	for range holders {
		// ctx carries no lease: each Obtain is a holder of its own.
		le, err := k.other.Obtain(ctx, names[0], p)
		if err != nil {
			fail(err)
		}
		held = append(held, le)
	}
	return k.releaser(held)
}

// releaser returns a function that releases les once; a lease already
// lost (Lose) or force-released is not an error.
func (k *Kit) releaser(les []*locker.Lease) func() {
	done := false
	return func() {
		k.t.Helper()
		if done {
			return
		}
		done = true
		ctx, cancel := k.ctx()
		defer cancel()
		for _, le := range les {
			if err := le.Release(ctx); err != nil && !le.Lost() && !errors.Is(err, locker.ErrNotHeld) {
				k.t.Errorf("locktest: release %q: %v", le.Key(), err)
			}
		}
	}
}

// WaitHeld waits until someone holds the lock named key — the handler
// under test, once its guard let it run — and fails the test after 10s.
// Start the request in a goroutine, WaitHeld, then change the state
// (Lose, Down...) while the handler runs.
func (k *Kit) WaitHeld(key string) {
	k.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := k.ctx()
		st, err := k.other.Inspect(ctx, key)
		cancel()
		if err == nil && len(st.Holders) > 0 {
			return
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("locktest: nobody held %q within %v (last error: %v)", key, timeout, err)
		}
		time.Sleep(time.Millisecond) // polling with a deadline
	}
}

// Lose makes every holder of the lock named key lose it now, as when its
// lease ran out or an operator force-released it: the lock is free (or
// handed to the next waiter) and each holder's context — the guarded
// handler's request context — is cancelled with a cause matching
// locker.ErrLockLost (and locker.ErrForceReleased). A holder on Locker is
// cancelled before Lose returns; one on another process at its notice,
// at once. It fails the test when nothing holds key.
func (k *Kit) Lose(key string) {
	k.t.Helper()
	ctx, cancel := k.ctx()
	defer cancel()
	if err := k.lk.ForceRelease(locker.WithActor(ctx, "locktest"), key, "locktest: lease lost"); err != nil {
		k.t.Fatalf("locktest: Lose %q: %v", key, err)
	}
}

// Down takes Redis away from every Locker of the Kit: their connections
// are cut and new ones closed at once, so every call fails with
// locker.ErrUnavailable (HTTP 503, gRPC Unavailable) and held leases are
// lost at their next renewal. The data stays; Up brings Redis back. The
// test's clean-up calls Up before it closes the Lockers.
func (k *Kit) Down() { k.cut.setDown(true) }

// Up brings Redis back after Down and waits (up to 10s) until every
// Locker of the Kit answers again — each has noticed its cut connection
// and dialled anew — so the next request is served.
func (k *Kit) Up() {
	k.t.Helper()
	k.cut.setDown(false)
	deadline := time.Now().Add(timeout)
	for _, lk := range []*locker.Locker{k.lk, k.other} {
		for {
			ctx, cancel := k.ctx()
			err := lk.Healthy(ctx)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				k.t.Fatalf("locktest: Redis not back within %v: %v", timeout, err)
			}
			time.Sleep(time.Millisecond) // polling with a deadline
		}
	}
}

// ExhaustRate uses up the rate of a `rate` tag for a request with values,
// as earlier requests would have: the next request is refused (HTTP 429,
// gRPC ResourceExhausted) until the rate refills one request's share of
// the period (keyexpr.Rate.Interval) later — Advance can move that along
// on the embedded server. (A tag with a `wait` longer than the interval
// waits for the next slot instead.)
func (k *Kit) ExhaustRate(tag string, values Values) {
	k.t.Helper()
	spec, err := keyexpr.ParseTag(tag)
	if err != nil {
		k.t.Fatalf("locktest: %v", err)
	}
	if spec.Rate.N == 0 {
		k.t.Fatalf("locktest: ExhaustRate: tag `%s` has no rate field", tag)
	}
	names, err := specKeys(spec, values)
	if err != nil {
		k.t.Fatalf("locktest: %v", err)
	}
	p := locker.RateParams{Limit: spec.Rate.N, Period: spec.Rate.Period, Burst: spec.Rate.Burst, Name: "locktest"}
	ctx, cancel := k.ctx()
	defer cancel()
	// A bucket of Burst refills while it is drained: a few more calls.
	for range 2*p.Burst + 16 {
		_, err := k.other.Allow(ctx, names[0], p)
		switch {
		case errors.Is(err, locker.ErrRateLimited):
			return
		case err != nil:
			k.t.Fatalf("locktest: ExhaustRate `%s`: %v", tag, err)
		}
	}
	k.t.Fatalf("locktest: ExhaustRate `%s`: still admitting after %d requests", tag, 2*p.Burst+16)
}

// Advance moves the embedded server's clock d ahead, at once and for the
// rest of the test: the TIME locktag's scripts read (rate limits refill;
// new fencing tokens and lease times) and every key's time to live
// (leases in Redis, idempotency markers and records, rate keys). The
// process's clock does not move: lease deadlines, the watchdog, waits and
// contexts keep real time, so a holder whose lease ran out in Redis learns
// it at its next renewal (Lose says so at once). d must be positive, else
// the test fails. On a redis-server Advance skips the test (t.Skip);
// WithEmbedded keeps such a test on miniredis. See
// docs/testing.md#advance-what-moves-and-what-does-not.
func (k *Kit) Advance(d time.Duration) {
	k.t.Helper()
	if d <= 0 {
		k.t.Fatalf("locktest: Advance(%v): the clock only moves forward", d)
	}
	if k.emb == nil {
		k.t.Skipf("locktest: Advance needs the embedded miniredis; this Kit runs on %s, whose clock cannot be moved", k.name)
	}
	k.emb.advance(d)
}
