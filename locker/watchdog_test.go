package locker_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// TestWatchdogOutlivesLease: a holder that runs for several leases keeps the
// lock; no contender gets in; the watchdog stops after release.
func TestWatchdogOutlivesLease(t *testing.T) {
	srv := redistest.Start(t)
	// One pipelined connection, dialled before the baseline: the goroutine
	// count then moves only with the lockers' own goroutines (a second
	// connection is dialled when first needed).
	// Renewing at a tenth of the lease leaves slack for a loaded CI machine.
	lk := newPipelined(t, srv, 1, locker.WithWatchdog(time.Second, 100*time.Millisecond))
	other := newPipelined(t, srv, 1)
	ctx := context.Background()
	warmListener(t, lk) // its first lease subscribes the control channel, for good
	// Its pipelined connection's reader goroutine lives as long as it does.
	if err := other.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()

	le := mustObtain(t, lk, ctx, "wd", locker.Params{})
	hold := time.After(2500 * time.Millisecond) // two and a half leases
	for done := false; !done; {
		select {
		case <-hold:
			done = true
		default:
			if _, err := other.Obtain(ctx, "wd", locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
				t.Fatalf("contender: %v, want ErrNotObtained", err)
			}
			if pttl := intReply(t, srv, "PTTL", "locktag:{wd}"); pttl <= 0 {
				t.Fatalf("lock key PTTL %d while held", pttl)
			}
			if err := le.Context().Err(); err != nil {
				t.Fatalf("holder's context ended: %v", context.Cause(le.Context()))
			}
			time.Sleep(10 * time.Millisecond) // pacing of the contender, not synchronisation
		}
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	goroutinesSettle(t, base)
	// No renewal after release: the key stays gone.
	if n := intReply(t, srv, "EXISTS", "locktag:{wd}"); n != 0 {
		t.Fatal("key renewed after release")
	}
}

// TestLostWhenKeyDeleted: a renewal refused (the key was deleted behind the
// holder's back) cancels the holder's context with ErrLockLost, and the
// watchdog never re-acquires.
func TestLostWhenKeyDeleted(t *testing.T) {
	srv := redistest.Start(t)
	const lease = 2 * time.Second
	lk := newLocker(t, srv, locker.WithWatchdog(lease, 100*time.Millisecond))
	le := mustObtain(t, lk, context.Background(), "del", locker.Params{})
	start := time.Now()
	if _, err := srv.Do("DEL", "locktag:{del}"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-le.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("context not cancelled after the key was deleted")
	}
	if d := time.Since(start); d > lease {
		t.Fatalf("loss noticed after %v, later than the lease %v", d, lease)
	}
	if cause := context.Cause(le.Context()); !errors.Is(cause, locker.ErrLockLost) || !le.Lost() {
		t.Fatalf("cause %v, want ErrLockLost", cause)
	}
	if n := intReply(t, srv, "EXISTS", "locktag:{del}"); n != 0 {
		t.Fatal("watchdog re-acquired a lost lock")
	}
	if err := le.Release(context.Background()); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("release of a lost lock: %v", err)
	}
}

// TestLostWhenServerDies: renewal impossible; the context is cancelled no
// later than the lease deadline.
func TestLostWhenServerDies(t *testing.T) {
	srv := redistest.Start(t)
	const lease, slack = time.Second, 500 * time.Millisecond // slack: timer delay on a loaded machine
	lk := newLocker(t, srv, locker.WithWatchdog(lease, 200*time.Millisecond))
	obtained := time.Now()
	le := mustObtain(t, lk, context.Background(), "kill", locker.Params{})
	srv.Stop()
	select {
	case <-le.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("context not cancelled after the server died")
	}
	// The lease deadline is counted from the last renewal sent, which is at
	// most the lease after obtaining (renewals stop working at once).
	if d := time.Since(obtained); d > lease+slack {
		t.Fatalf("loss noticed after %v; lease %v", d, lease)
	}
	if !errors.Is(context.Cause(le.Context()), locker.ErrLockLost) {
		t.Fatalf("cause %v", context.Cause(le.Context()))
	}
}

// TestFixedTTLExpires: a fixed TTL is a hard cap: the context is cancelled
// at expiry, and the next holder gets the lock.
func TestFixedTTLExpires(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	le := mustObtain(t, lk, context.Background(), "ttl", locker.Params{TTL: 200 * time.Millisecond})
	<-le.Context().Done()
	if !errors.Is(context.Cause(le.Context()), locker.ErrLockLost) {
		t.Fatalf("cause %v", context.Cause(le.Context()))
	}
	mustObtain(t, lk, context.Background(), "ttl", locker.Params{Wait: 2 * time.Second})
}

// TestExtend moves both the Redis lease and the local deadline.
func TestExtend(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	le := mustObtain(t, lk, ctx, "ext", locker.Params{TTL: 300 * time.Millisecond})
	if err := le.Extend(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if ttl, err := le.TTL(ctx); err != nil || ttl < 9*time.Second {
		t.Fatalf("TTL after extend: %v %v", ttl, err)
	}
	select {
	case <-le.Context().Done():
		t.Fatal("context cancelled at the old deadline")
	case <-time.After(500 * time.Millisecond):
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestHolderCrash: a holder whose process dies (its pool closed, nothing
// released) blocks others for at most its lease.
func TestHolderCrash(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name string
		p    locker.Params
	}{
		{"fixed", locker.Params{TTL: 400 * time.Millisecond}}, // = lease below
		{"watchdog", locker.Params{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const lease, slack = 400 * time.Millisecond, time.Second
			pool := srv.Pool(t)
			crashed := newLockerOn(t, redigo.New(pool), locker.WithWatchdog(lease, 100*time.Millisecond))
			mustObtain(t, crashed, context.Background(), "crash-"+tc.name, tc.p)
			start := time.Now()
			_ = pool.Close() // the process is gone: no release, no renewal
			_ = crashed.Close()

			lk := newLocker(t, srv)
			le := mustObtain(t, lk, context.Background(), "crash-"+tc.name, locker.Params{Wait: 5 * time.Second})
			if d := time.Since(start); d > lease+slack {
				t.Fatalf("next holder waited %v; lease %v", d, lease)
			}
			_ = le.Release(context.Background())
		})
	}
}

// TestWaitIsNotPolling: a waiter makes a bounded number of Redis calls
// however long it waits.
func TestWaitIsNotPolling(t *testing.T) {
	srv := redistest.Start(t)
	holder, waiter := newLocker(t, srv), newLocker(t, srv)
	ctx := context.Background()
	// Load every script once, so NOSCRIPT fallbacks do not count below.
	mustObtain(t, holder, ctx, "warm", locker.Params{}).Release(ctx)
	le := mustObtain(t, holder, ctx, "np", locker.Params{TTL: 30 * time.Second})
	if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		w, err := waiter.Obtain(ctx, "np", locker.Params{Wait: 10 * time.Second})
		if err == nil {
			err = w.Release(ctx)
		}
		got <- err
	}()
	eventually(t, 5*time.Second, "waiter queued", func() bool { return queueLen(t, srv, "np") == 1 })
	time.Sleep(500 * time.Millisecond) // a sleep-polling waiter would call ~100 times here
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	info, err := redis.String(srv.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatal(err)
	}
	calls := commandCalls(info, "evalsha") + commandCalls(info, "eval")
	// waiter: queue (1), maybe a re-check after subscribing (1), release (1);
	// holder: release (1).
	if calls > 4 {
		t.Fatalf("%d script calls for one wait; a waiter must not poll\n%s", calls, info)
	}
}

// TestRenewalSurvivesPoolExhaustion: request traffic holding every pooled
// connection must not starve the watchdog into losing a healthy lock, nor
// keep a holder from releasing.
func TestRenewalSurvivesPoolExhaustion(t *testing.T) {
	srv := redistest.Start(t)
	pool := srv.Pool(t)
	pool.MaxActive = 2
	// Pooled calls: the pool is what is exhausted (the pipelined default
	// does not take its connections: TestPipelinedIgnoresPoolExhaustion).
	lk := newLockerOn(t, redigo.New(pool, redigo.WithPipelining(0)), locker.WithWatchdog(time.Second, 100*time.Millisecond))
	defer lk.Close()
	ctx := context.Background()
	le := mustObtain(t, lk, ctx, "starved", locker.Params{})
	busy := []redis.Conn{pool.Get(), pool.Get()} // the traffic: every connection taken
	if _, err := busy[0].Do("PING"); err != nil {
		t.Fatal(err)
	}
	if _, err := lk.Obtain(ctx, "other", locker.Params{}); !errors.Is(err, locker.ErrPoolExhausted) {
		t.Fatalf("requests are not starved: %v", err)
	}
	select {
	case <-le.Context().Done():
		t.Fatalf("lock lost while the pool was exhausted: %v", context.Cause(le.Context()))
	case <-time.After(2500 * time.Millisecond): // two and a half leases
	}
	if err := le.Release(ctx); err != nil {
		t.Fatalf("release with the pool exhausted: %v", err)
	}
	for _, c := range busy {
		c.Close()
	}
	if n := intReply(t, srv, "EXISTS", "locktag:{starved}"); n != 0 {
		t.Fatal("lock not released")
	}
}

// TestFixedLeaseRunsOutUnwatched: a fixed lease nobody asked the context of
// arms no expiry timer, yet reports its end as one would have: Lost after
// the TTL, a context asked for later is born cancelled with ErrLockLost,
// and Release answers ErrNotHeld.
func TestFixedLeaseRunsOutUnwatched(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	// A 50ms lease can end before the reply arrives on a loaded machine
	// (ErrGrantExpired): try again, bounded.
	var le *locker.Lease
	for attempt := 0; ; attempt++ {
		var err error
		le, err = lk.Obtain(ctx, "unwatched", locker.Params{TTL: 50 * time.Millisecond})
		if err == nil {
			break
		}
		if !errors.Is(err, locker.ErrGrantExpired) || attempt == 20 {
			t.Fatalf("Obtain(\"unwatched\"): %v", err)
		}
	}
	if le.Lost() {
		t.Fatal("lost at once")
	}
	testwait.Within(t, 5*time.Second, "the lease lost after its TTL", le.Lost)
	lctx := le.Context()
	select {
	case <-lctx.Done():
	case <-time.After(time.Second):
		t.Fatal("context of a lease that ran out not cancelled")
	}
	if cause := context.Cause(lctx); !errors.Is(cause, locker.ErrLockLost) {
		t.Fatalf("cause %v, want ErrLockLost", cause)
	}
	if err := le.Release(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("Release: %v, want ErrNotHeld", err)
	}

	// Released before it ran out: not lost, context born cancelled with
	// ErrNotHeld.
	le = mustObtain(t, lk, ctx, "unwatched", locker.Params{TTL: time.Second})
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if le.Lost() {
		t.Fatal("released lease reported lost")
	}
	if cause := context.Cause(le.Context()); !errors.Is(cause, locker.ErrNotHeld) {
		t.Fatalf("cause after release %v, want ErrNotHeld", cause)
	}
}
