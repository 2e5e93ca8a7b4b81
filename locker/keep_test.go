package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// keptFor checks that lk's key, kept for keep by a ReleaseAfter sent at
// sent, stays busy for the window and is free after it.
func keptFor(t *testing.T, lk *locker.Locker, key string, sent time.Time, keep time.Duration) {
	t.Helper()
	ctx := context.Background()
	if _, err := lk.Obtain(ctx, key, locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("inside the window: %v, want ErrNotObtained", err)
	}
	var le *locker.Lease
	eventually(t, keep+5*time.Second, "the kept lock ends", func() bool {
		var err error
		le, err = lk.Obtain(ctx, key, locker.Params{})
		return err == nil
	})
	if took := time.Since(sent); took < keep {
		t.Fatalf("obtained %v after the ReleaseAfter, inside the %v window", took, keep)
	}
	_ = le.Release(ctx)
}

// TestReleaseAfter: the last hold's ReleaseAfter keeps the lock busy for
// the window, then frees it; the lease itself ends at once.
func TestReleaseAfter(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	le := mustObtain(t, lk, ctx, "k", locker.Params{})
	lctx := le.Context()
	in := mustObtain(t, lk, lctx, "k", locker.Params{})
	if err := in.ReleaseAfter(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, holds := lockState(t, srv, "k"); holds != 1 {
		t.Fatalf("a nested ReleaseAfter left %d holds, want 1", holds)
	}
	sent := time.Now()
	if err := le.ReleaseAfter(ctx, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(context.Cause(lctx), locker.ErrNotHeld) {
		t.Fatalf("lease context cause %v, want ErrNotHeld", context.Cause(lctx))
	}
	if err := le.Release(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("Release after ReleaseAfter: %v, want ErrNotHeld", err)
	}
	keptFor(t, lk, "k", sent, 300*time.Millisecond)
}

// TestReleaseAfterControl: the same check on a plain Release finds the
// lock free at once — the window is ReleaseAfter's doing.
func TestReleaseAfterControl(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	le := mustObtain(t, lk, ctx, "k", locker.Params{})
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := lk.Obtain(ctx, "k", locker.Params{})
	if err != nil {
		t.Fatalf("control: right after Release: %v", err)
	}
	_ = again.Release(ctx)
}

// TestReleaseAfterWaiter: a queued waiter gets the kept lock when the
// window ends — told by the keep's notice, not after the old lease.
func TestReleaseAfterWaiter(t *testing.T) {
	srv := redistest.Start(t)
	a, b := newLocker(t, srv), newLocker(t, srv)
	ctx := context.Background()
	le := mustObtain(t, a, ctx, "kw", locker.Params{}) // a 30s watchdog lease
	got := make(chan error, 1)
	go func() {
		w, err := b.Obtain(ctx, "kw", locker.Params{Wait: 10 * time.Second})
		if err == nil {
			_ = w.Release(ctx)
		}
		got <- err
	}()
	eventually(t, 5*time.Second, "the waiter queued", func() bool { return queueLen(t, srv, "kw") == 1 })
	sent := time.Now()
	if err := le.ReleaseAfter(ctx, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not get the lock within 5s of a 300ms window")
	}
	if took := time.Since(sent); took < 300*time.Millisecond {
		t.Fatalf("the waiter got the lock %v after the ReleaseAfter, inside the window", took)
	}
}

// TestReleaseAfterKinds: a semaphore's permit cannot be kept; Redlock
// keeps by quorum.
func TestReleaseAfterKinds(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	p := mustObtain(t, lk, ctx, "ks", locker.Params{Limit: 2})
	if err := p.ReleaseAfter(ctx, time.Second); !errors.Is(err, locker.ErrKindUnsupported) {
		t.Fatalf("semaphore ReleaseAfter: %v, want ErrKindUnsupported", err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatalf("the permit was touched: %v", err)
	}
	rl := newRedlock(t, redistest.StartN(t, 3))
	le := mustObtain(t, rl, ctx, "kr", locker.Params{})
	sent := time.Now()
	if err := le.ReleaseAfter(ctx, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	keptFor(t, rl, "kr", sent, 300*time.Millisecond)
}
