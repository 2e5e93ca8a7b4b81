package locker_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/google/uuid"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/protocol"
	"github.com/locktag/locktag/locker/redigo"
)

func TestObtainBusyRelease(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()

	le := mustObtain(t, lk, ctx, "a", locker.Params{TTL: 5 * time.Second})
	if le.Holds() != 1 || le.Key() != "a" {
		t.Fatalf("holds %d key %q", le.Holds(), le.Key())
	}
	if _, err := lk.Obtain(ctx, "a", locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("busy obtain: %v, want ErrNotObtained", err)
	}
	if ttl, err := le.TTL(ctx); err != nil || ttl <= 4*time.Second {
		t.Fatalf("TTL = %v, %v", ttl, err)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := le.Release(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("second release: %v, want ErrNotHeld", err)
	}
	if n := intReply(t, srv, "EXISTS", "locktag:{a}"); n != 0 {
		t.Fatal("lock key left after release")
	}
	if cause := context.Cause(le.Context()); !errors.Is(cause, locker.ErrNotHeld) {
		t.Fatalf("context cause after release: %v", cause)
	}
	if _, err := lk.Obtain(ctx, "", locker.Params{}); !errors.Is(err, locker.ErrEmptyKey) {
		t.Fatalf("empty key: %v", err)
	}
}

func TestReleaseOfOthersLockRefused(t *testing.T) {
	srv := redistest.Start(t)
	a, b := newLocker(t, srv), newLocker(t, srv)
	ctx := context.Background()

	old := mustObtain(t, b, ctx, "k", locker.Params{TTL: 100 * time.Millisecond})
	eventually(t, 2*time.Second, "old lease lost", old.Lost)
	// The local deadline passes before the key expires in Redis: wait for it.
	cur := mustObtain(t, a, ctx, "k", locker.Params{TTL: 10 * time.Second, Wait: 2 * time.Second})
	owner, _ := lockState(t, srv, "k")

	if err := old.Release(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("stale release: %v, want ErrNotHeld", err)
	}
	if err := old.Extend(ctx, time.Minute); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("stale extend: %v, want ErrNotHeld", err)
	}
	if _, err := old.TTL(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("stale TTL: %v, want ErrNotHeld", err)
	}
	after, _ := lockState(t, srv, "k")
	if after != owner || after == "" {
		t.Fatalf("owner changed by a stale release: %q -> %q", owner, after)
	}
	if err := cur.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestReentrancy(t *testing.T) {
	srv := redistest.Start(t)
	lk, other := newLocker(t, srv), newLocker(t, srv)
	ctx := context.Background()

	l1 := mustObtain(t, lk, ctx, "r", locker.Params{})
	l2 := mustObtain(t, lk, l1.Context(), "r", locker.Params{})
	// A lease for another key in between does not hide the outer one.
	x := mustObtain(t, lk, l2.Context(), "x", locker.Params{})
	l3 := mustObtain(t, lk, x.Context(), "r", locker.Params{Wait: time.Second})
	if l1.Holds() != 1 || l2.Holds() != 2 || l3.Holds() != 3 {
		t.Fatalf("holds %d %d %d", l1.Holds(), l2.Holds(), l3.Holds())
	}
	if l3.Token() != l1.Token() {
		t.Fatalf("nested holds share the fencing token: %d vs %d", l3.Token(), l1.Token())
	}
	if locker.FromContext(l3.Context()) != l3 {
		t.Fatal("FromContext does not return the innermost lease")
	}
	if err := x.Release(ctx); err != nil {
		t.Fatal(err)
	}

	got := make(chan error, 1)
	go func() {
		le, err := other.Obtain(ctx, "r", locker.Params{Wait: 10 * time.Second})
		if err == nil {
			err = le.Release(ctx)
		}
		got <- err
	}()
	eventually(t, 5*time.Second, "waiter queued", func() bool { return queueLen(t, srv, "r") == 1 })

	for _, le := range []*locker.Lease{l3, l2} {
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, n := lockState(t, srv, "r"); n != 1 {
		t.Fatalf("hold count after 2 of 3 releases: %d", n)
	}
	select {
	case err := <-got:
		t.Fatalf("waiter got in while a hold remained: %v", err)
	default:
	}
	if l1.Context().Err() != nil {
		t.Fatal("outer context cancelled while a hold remains")
	}
	if err := l1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not woken by the last release")
	}
}

func TestReentryAfterLossFails(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	le := mustObtain(t, lk, ctx, "g", locker.Params{TTL: 10 * time.Second})
	if _, err := srv.Do("DEL", "locktag:{g}"); err != nil {
		t.Fatal(err)
	}
	_, err := lk.Obtain(le.Context(), "g", locker.Params{})
	if !errors.Is(err, locker.ErrNotObtained) || !errors.Is(err, locker.ErrLockLost) {
		t.Fatalf("re-entry of a lost lock: %v", err)
	}
}

func TestFencingIncreasesAcrossRestart(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	lk := newLocker(t, srv)
	var last int64
	next := func() {
		t.Helper()
		le := mustObtain(t, lk, ctx, "f", locker.Params{TTL: time.Minute})
		if le.Token() <= last {
			t.Fatalf("fencing token went from %d to %d", last, le.Token())
		}
		last = le.Token()
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		next()
	}
	srv.Restart() // no persistence: the counter is gone
	if n := intReply(t, srv, "DBSIZE"); n != 0 {
		t.Fatalf("restarted server kept %d keys", n)
	}
	for range 5 {
		eventually(t, 5*time.Second, "obtain after restart", func() bool {
			le, err := lk.Obtain(ctx, "f", locker.Params{TTL: time.Minute})
			if err != nil {
				return false
			}
			defer le.Release(ctx)
			if le.Token() <= last {
				t.Fatalf("fencing token went from %d to %d after restart", last, le.Token())
			}
			last = le.Token()
			return true
		})
	}
}

func TestWaitTimesOut(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	le := mustObtain(t, lk, ctx, "w", locker.Params{TTL: 10 * time.Second})
	defer le.Release(ctx)
	start := time.Now()
	_, err := lk.Obtain(ctx, "w", locker.Params{Wait: 150 * time.Millisecond})
	if !errors.Is(err, locker.ErrNotObtained) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want plain ErrNotObtained", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("returned after %v, before the wait ran out", d)
	}
	if n := queueLen(t, srv, "w"); n != 0 {
		t.Fatalf("%d queue entries left", n)
	}
}

func TestCancelWhileWaiting(t *testing.T) {
	srv := redistest.Start(t)
	// One pipelined connection, dialled before the baseline: the goroutine
	// count then moves only with the locker's own goroutines (a second
	// connection is dialled when first needed).
	lk := newPipelined(t, srv, 1, locker.WithUnsubscribeDelay(0))
	ctx := context.Background()
	le := mustObtain(t, lk, ctx, "c", locker.Params{TTL: 10 * time.Second})
	defer le.Release(ctx)
	warmListener(t, lk)
	base := runtime.NumGoroutine()

	const n = 20
	errs := make(chan error, n)
	cctx, cancel := context.WithCancel(ctx)
	for range n {
		go func() {
			_, err := lk.Obtain(cctx, "c", locker.Params{Wait: time.Minute})
			errs <- err
		}()
	}
	eventually(t, 5*time.Second, "all queued", func() bool { return queueLen(t, srv, "c") == n })
	cancel()
	deadline := time.After(5 * time.Second)
	for range n {
		select {
		case err := <-errs:
			if !errors.Is(err, locker.ErrNotObtained) || !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want ErrNotObtained joined with context.Canceled", err)
			}
		case <-deadline:
			t.Fatal("cancelled waiters did not return")
		}
	}
	// A cancelled waiter's leave may finish after Obtain returned: poll.
	eventually(t, 5*time.Second, "no orphan queue entries", func() bool { return queueLen(t, srv, "c") == 0 })
	goroutinesSettle(t, base)
}

func TestDeadlineWhileWaiting(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	le := mustObtain(t, lk, context.Background(), "d", locker.Params{TTL: 10 * time.Second})
	defer le.Release(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := lk.Obtain(ctx, "d", locker.Params{Wait: time.Minute})
	if !errors.Is(err, locker.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	srv.Stop()
	_, err := lk.Obtain(context.Background(), "u", locker.Params{Wait: time.Second})
	if !errors.Is(err, locker.ErrUnavailable) || errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("err = %v, want ErrUnavailable only", err)
	}
}

func TestPoolExhausted(t *testing.T) {
	srv := redistest.Start(t)
	pool := srv.Pool(t)
	pool.MaxActive = 1
	// Pooled calls: the pipelined default does not use the pool's connections.
	lk := newLockerOn(t, redigo.New(pool, redigo.WithPipelining(0)))
	held := pool.Get() // the pool's only connection
	defer held.Close()
	_, err := lk.Obtain(context.Background(), "p", locker.Params{})
	if !errors.Is(err, locker.ErrPoolExhausted) || !errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrPoolExhausted and ErrUnavailable", err)
	}
}

func TestScriptFlushIsTransparent(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	for range 3 {
		if _, err := srv.Do("SCRIPT", "FLUSH"); err != nil {
			t.Fatal(err)
		}
		le := mustObtain(t, lk, ctx, "s", locker.Params{})
		if _, err := srv.Do("SCRIPT", "FLUSH"); err != nil {
			t.Fatal(err)
		}
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// retryingDriver runs every acquire twice, as a client that retries a
// command whose reply was lost would.
type retryingDriver struct{ driver.Driver }

func (d retryingDriver) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	if protocol.Named(s, "mutex_acquire") {
		if _, err := d.Driver.Eval(ctx, s, keys, args...); err != nil {
			return nil, err
		}
	}
	return d.Driver.Eval(ctx, s, keys, args...)
}

// TestRetriedAcquireIsIdempotent: an acquire that runs twice (a client's
// retry of a call whose reply was lost) obtains the lock once, with one
// hold, so one release frees it.
func TestRetriedAcquireIsIdempotent(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLockerOn(t, retryingDriver{redigo.New(srv.Pool(t))})
	ctx := context.Background()
	le := mustObtain(t, lk, ctx, "retry", locker.Params{TTL: 10 * time.Second})
	if _, n := lockState(t, srv, "retry"); le.Holds() != 1 || n != 1 {
		t.Fatalf("holds %d (Redis %d) after a retried acquire", le.Holds(), n)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := intReply(t, srv, "EXISTS", "locktag:{retry}"); n != 0 {
		t.Fatal("one release did not free a retried acquire")
	}
}

func TestPing(t *testing.T) {
	srv := redistest.Start(t, redistest.WithArgs("--requirepass", "s3cret"))
	good := newLocker(t, srv)
	if err := good.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	pool := srv.Pool(t)
	dial := pool.DialContext
	pool.DialContext = func(ctx context.Context) (redis.Conn, error) {
		c, err := dial(ctx)
		if err == nil {
			_, err = c.Do("AUTH", "wrong")
		}
		return c, err
	}
	bad := newLockerOn(t, redigo.New(pool))
	err := bad.Ping(context.Background())
	if !errors.Is(err, locker.ErrUnavailable) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Ping with a wrong password: %v", err)
	}
}

// TestLockerID: every Locker has an instance id of its own, a random
// (version 4) UUID.
func TestLockerID(t *testing.T) {
	srv := redistest.Start(t)
	a, b := newLocker(t, srv), newLocker(t, srv)
	for _, lk := range []*locker.Locker{a, b} {
		id, err := uuid.Parse(lk.ID())
		if err != nil || id.Version() != 4 {
			t.Errorf("ID %q: %v, version %v; want a UUID v4", lk.ID(), err, id.Version())
		}
	}
	if a.ID() == b.ID() {
		t.Errorf("two Lockers share the ID %q", a.ID())
	}
}
