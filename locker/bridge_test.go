package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// TestPlainLockBridge: a bridged mutex is busy while a plain SET NX lock
// holds its name and taken once that lock is released (at its expiry, the
// latest); while held, the plain key holds the owner's token and expires
// with the lease (renewals and keep move it), so a plain SET NX fails;
// the release drops it. Without the bridge, the plain lock is not seen
// (the control).
func TestPlainLockBridge(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	lk := newLocker(t, srv, locker.WithPlainLockBridge(nil))
	plain := func(args ...any) any {
		t.Helper()
		v, err := srv.Do("SET", append([]any{"acct"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	plain("other", "NX", "PX", 400)
	if _, err := lk.Obtain(ctx, "acct", locker.Params{TTL: time.Second}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("obtain while a plain lock holds the name: %v", err)
	}
	start := time.Now()
	le := mustObtain(t, lk, ctx, "acct", locker.Params{TTL: time.Second, Wait: 3 * time.Second})
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("obtained after %v, before the plain lock expired", d)
	}
	if v := plain("intruder", "NX", "PX", 1000); v != nil {
		t.Fatalf("a plain SET NX took a name locktag holds: %v", v)
	}
	owner, _ := srv.Do("GET", "acct")
	if pttl := intReply(t, srv, "PTTL", "acct"); pttl <= 0 || pttl > 1000 {
		t.Fatalf("plain key PTTL %d, want the lease's", pttl)
	}
	if err := le.Extend(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if pttl := intReply(t, srv, "PTTL", "acct"); pttl <= 1000 {
		t.Fatalf("plain key PTTL %d after a renewal to 5s", pttl)
	}
	if again, _ := srv.Do("GET", "acct"); string(again.([]byte)) != string(owner.([]byte)) {
		t.Fatalf("plain key %q, then %q", owner, again)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := intReply(t, srv, "EXISTS", "acct"); n != 0 {
		t.Fatal("the release left the plain key")
	}

	// Hand-over between locktag waiters moves the plain key to the new owner.
	a := mustObtain(t, lk, ctx, "acct", locker.Params{TTL: 5 * time.Second})
	got := make(chan *locker.Lease, 1)
	go func() {
		b, err := lk.Obtain(ctx, "acct", locker.Params{TTL: 5 * time.Second, Wait: 5 * time.Second})
		if err != nil {
			t.Error(err)
		}
		got <- b
	}()
	eventually(t, 5*time.Second, "the waiter queued", func() bool { return queueLen(t, srv, "acct") == 1 })
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b := <-got
	if b == nil {
		t.FailNow()
	}
	if v := plain("intruder", "NX", "PX", 1000); v != nil {
		t.Fatal("a plain SET NX took a name handed to a locktag waiter")
	}
	if err := b.ReleaseAfter(ctx, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v := plain("intruder", "NX", "PX", 1000); v != nil {
		t.Fatal("a plain SET NX took a name locktag keeps after release")
	}
	eventually(t, 5*time.Second, "the kept lock's end", func() bool { return plain("late", "NX", "PX", 1000) != nil })

	// The control: without the bridge the plain lock is not seen.
	other := newLocker(t, srv)
	plain("seed", "XX", "PX", 5000)
	le, err := other.Obtain(ctx, "acct", locker.Params{TTL: time.Second})
	if err != nil {
		t.Fatalf("a Locker without the bridge: %v", err)
	}
	_ = le.Release(ctx)

	if _, err := locker.NewRedlock(nil, locker.WithPlainLockBridge(nil)); !errors.Is(err, locker.ErrBadOption) {
		t.Fatalf("NewRedlock with a bridge: %v", err)
	}
}
