package locker_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// TestForceReleaseRace: a force-release racing the holder's own release:
// exactly one of them succeeds, the other gets ErrNotHeld, and the lock
// ends free with nothing left behind.
func TestForceReleaseRace(t *testing.T) {
	srv := redistest.Start(t)
	holderLk := newLocker(t, srv, longLease)
	opLk := newLocker(t, srv)
	ctx := context.Background()
	for i := range 50 {
		le := mustObtain(t, holderLk, ctx, "race", locker.Params{})
		var wg sync.WaitGroup
		var relErr, forceErr error
		wg.Go(func() { relErr = le.Release(ctx) })
		wg.Go(func() { forceErr = opLk.ForceRelease(ctx, "race", "race") })
		wg.Wait()
		if (relErr == nil) == (forceErr == nil) {
			t.Fatalf("round %d: release %v, force-release %v: want exactly one to succeed", i, relErr, forceErr)
		}
		for _, err := range []error{relErr, forceErr} {
			if err != nil && !errors.Is(err, locker.ErrNotHeld) {
				t.Fatalf("round %d: %v, want ErrNotHeld", i, err)
			}
		}
		if n := intReply(t, srv, "EXISTS", "locktag:{race}"); n != 0 {
			t.Fatalf("round %d: lock left behind", i)
		}
	}
}

// TestForceReleaseSemaphore: every permit holder is freed and told; the
// queued waiters get the permits.
func TestForceReleaseSemaphore(t *testing.T) {
	srv := redistest.Start(t)
	holderLk := newLocker(t, srv, longLease)
	waiterLk := newLocker(t, srv, longLease)
	opLk := newLocker(t, srv)
	ctx := context.Background()
	p := locker.Params{Limit: 2}
	a := mustObtain(t, holderLk, ctx, "sem", p)
	b := mustObtain(t, holderLk, ctx, "sem", p)
	got := make(chan *locker.Lease, 2)
	for range 2 {
		go func() {
			le, err := waiterLk.Obtain(ctx, "sem", locker.Params{Limit: 2, Wait: time.Minute})
			if err != nil {
				t.Error(err)
			}
			got <- le
		}()
	}
	eventually(t, promptly, "waiters queued", func() bool { return intReply(t, srv, "ZCARD", "locktag:{sem}:s:q") == 2 })
	eventually(t, promptly, "holder subscribed", func() bool { return numsub(t, srv, "locktag:ctl") >= 1 })
	if err := opLk.ForceRelease(ctx, "sem", "drain"); err != nil {
		t.Fatal(err)
	}
	checkForced(t, a, "drain")
	checkForced(t, b, "drain")
	for range 2 {
		select {
		case le := <-got:
			if le == nil {
				t.FailNow()
			}
			if le.Token() <= b.Token() {
				t.Errorf("new permit's fence %d not above the freed %d", le.Token(), b.Token())
			}
			defer le.Release(ctx)
		case <-time.After(promptly):
			t.Fatal("waiter not granted a freed permit")
		}
	}
	if err := a.Release(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("freed permit's Release: %v, want ErrNotHeld", err)
	}
}

// TestForceReleaseRW: every reader is freed and told, and the queued
// writer gets the lock with a larger fence; then the writer is freed.
func TestForceReleaseRW(t *testing.T) {
	srv := redistest.Start(t)
	holderLk := newLocker(t, srv, longLease)
	waiterLk := newLocker(t, srv, longLease)
	opLk := newLocker(t, srv)
	ctx := context.Background()
	r1 := mustObtain(t, holderLk, ctx, "doc", locker.Params{Mode: locker.Read})
	r2 := mustObtain(t, holderLk, ctx, "doc", locker.Params{Mode: locker.Read})
	got := make(chan *locker.Lease, 1)
	go func() {
		le, err := waiterLk.Obtain(ctx, "doc", locker.Params{Mode: locker.Write, Wait: time.Minute})
		if err != nil {
			t.Error(err)
		}
		got <- le
	}()
	eventually(t, promptly, "writer queued", func() bool { return intReply(t, srv, "ZCARD", "locktag:{doc}:rw:q") == 1 })
	eventually(t, promptly, "holder subscribed", func() bool { return numsub(t, srv, "locktag:ctl") >= 1 })
	if err := opLk.ForceRelease(ctx, "doc", "readers stuck"); err != nil {
		t.Fatal(err)
	}
	checkForced(t, r1, "readers stuck")
	checkForced(t, r2, "readers stuck")
	var w *locker.Lease
	select {
	case w = <-got:
	case <-time.After(promptly):
		t.Fatal("writer not granted the freed lock")
	}
	if w == nil {
		t.FailNow()
	}
	if w.Token() <= r1.Token() {
		t.Errorf("writer's fence %d not above the readers' %d", w.Token(), r1.Token())
	}
	// waiterLk's first lease is w: its subscription is made now.
	eventually(t, promptly, "writer's Locker subscribed", func() bool { return numsub(t, srv, "locktag:ctl") >= 2 })
	if err := opLk.ForceRelease(ctx, "doc", "writer stuck"); err != nil {
		t.Fatal(err)
	}
	checkForced(t, w, "writer stuck")
	// Free now: a new writer enters at once.
	w2 := mustObtain(t, opLk, ctx, "doc", locker.Params{Mode: locker.Write})
	if w2.Token() <= w.Token() {
		t.Errorf("next writer's fence %d not above %d", w2.Token(), w.Token())
	}
	if err := w2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// numsub is the number of subscribers of channel.
func numsub(t *testing.T, srv *redistest.Server, channel string) int64 {
	t.Helper()
	v, err := srv.Do("PUBSUB", "NUMSUB", channel)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := v.([]any)
	if len(a) != 2 {
		t.Fatalf("PUBSUB NUMSUB: %v", v)
	}
	n, _ := a[1].(int64)
	return n
}

// lockedWriter serialises writes to w (a log written from several
// goroutines).
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestForceReleaseAfterReconnect: the control subscription dies with the
// subscriber connection; the next lease subscribes again, and notices are
// prompt again, for the leases held across the break too.
func TestForceReleaseAfterReconnect(t *testing.T) {
	srv := redistest.Start(t)
	holderLk := newLocker(t, srv, longLease)
	opLk := newLocker(t, srv)
	ctx := context.Background()

	before := mustObtain(t, holderLk, ctx, "before", locker.Params{})
	eventually(t, promptly, "holder subscribed", func() bool { return locker.ControlReady(holderLk) })
	if _, err := srv.Do("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
		t.Fatal(err)
	}
	eventually(t, promptly, "subscription gone", func() bool {
		return numsub(t, srv, "locktag:ctl") == 0 && !locker.ControlReady(holderLk)
	})
	after := mustObtain(t, holderLk, ctx, "after", locker.Params{})
	eventually(t, promptly, "holder subscribed again", func() bool {
		return numsub(t, srv, "locktag:ctl") == 1 && locker.ControlReady(holderLk)
	})
	for _, le := range []*locker.Lease{before, after} {
		if err := opLk.ForceRelease(ctx, le.Key(), "after reconnect"); err != nil {
			t.Fatal(err)
		}
		checkForced(t, le, "after reconnect")
	}
}

// TestForceReleaseMultiKey: a multi-key lease (both paths: one script, and
// key by key behind a queued key) is labelled on every key, and
// force-releasing one of its keys ends the whole lease with the reason.
func TestForceReleaseMultiKey(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv, longLease, locker.WithLabel("m"))
	opLk := newLocker(t, srv)
	ctx := context.Background()
	le, err := lk.ObtainMany(ctx, []string{"acct:1", "acct:2"}, locker.Params{Label: "transfer"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"acct:1", "acct:2"} {
		if h := mustInspect(t, opLk, k).Holder; h == nil || h.Label != "m; transfer" || h.Held < 0 {
			t.Fatalf("%s: holder %+v", k, h)
		}
	}
	eventually(t, promptly, "holder subscribed", func() bool { return locker.ControlReady(lk) })
	if err := opLk.ForceRelease(ctx, "acct:2", "multi"); err != nil {
		t.Fatal(err)
	}
	checkForced(t, le, "multi")
	if err := le.Release(ctx); err == nil {
		t.Error("Release of a force-released multi-key lease succeeded")
	}
	if owner, _ := lockState(t, srv, "acct:1"); owner != "" {
		t.Error("the other key stayed held after the lease's Release")
	}
}
