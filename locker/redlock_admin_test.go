package locker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// On Redlock, Inspect merges the masters' views (the holder a majority
// agree on), List visits every master, and ForceRelease frees the lock on
// every master: the holder is told at once, the waiter gets the lock with
// a larger fence; a minority remnant is freed but reads as not held.
func TestRedlockAdmin(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	holderLk := newRedlock(t, srvs, longLease, locker.WithLabel("rl-holder"))
	waiterLk := newRedlock(t, srvs, longLease)
	opLk := newRedlock(t, srvs)
	ctx := context.Background()

	old := mustObtain(t, holderLk, ctx, "rl", locker.Params{})
	got := make(chan *locker.Lease, 1)
	go func() {
		le, err := waiterLk.Obtain(ctx, "rl", locker.Params{Wait: time.Minute, Label: "next"})
		if err != nil {
			t.Error(err)
		}
		got <- le
	}()
	eventually(t, promptly, "waiter queued on every master", func() bool {
		for _, s := range srvs {
			if intReply(t, s, "ZCARD", "locktag:{rl}:q") != 1 {
				return false
			}
		}
		return true
	})
	eventually(t, promptly, "holder subscribed", func() bool { return locker.ControlReady(holderLk) })

	st, err := opLk.Inspect(ctx, "rl")
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := lockState(t, srvs[0], "rl")
	if st.Kind != locker.KindMutex || st.Holder == nil || st.Holder.Owner != owner || st.Holder.Fence != old.Token() || st.Holder.Label != "rl-holder" {
		t.Fatalf("merged state %+v (holder %+v), want owner %s fence %d", st, st.Holder, owner, old.Token())
	}
	if len(st.Waiters) != 1 || st.Waiters[0].Label != "next" {
		t.Fatalf("merged waiters %+v", st.Waiters)
	}
	names, _ := listAll(t, opLk, "r")
	if fmt.Sprint(names) != "[rl]" {
		t.Fatalf("List on Redlock: %v", names)
	}

	if err := opLk.ForceRelease(ctx, "rl", "redlock stuck"); err != nil {
		t.Fatal(err)
	}
	checkForced(t, old, "redlock stuck")
	var next *locker.Lease
	select {
	case next = <-got:
	case <-time.After(promptly):
		t.Fatal("waiter did not get the force-released lock")
	}
	if next == nil {
		t.FailNow()
	}
	if next.Token() <= old.Token() {
		t.Errorf("new fence %d not above %d", next.Token(), old.Token())
	}
	if err := old.Release(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Errorf("old holder's Release: %v", err)
	}
	if err := next.Release(ctx); err != nil {
		t.Fatal(err)
	}

	if err := opLk.ForceRelease(ctx, "rl", "again"); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("free lock: %v, want ErrNotHeld", err)
	}
	// A remnant on one master: not held by Redlock's rule, but cleaned up.
	now := time.Now().UnixMilli()
	remnant := fmt.Sprintf("remnant 5 1 0 %d %d -", now, now+60000) // a lock value (docs/protocol.md)
	if _, err := srvs[2].Do("SET", "locktag:{rl}", remnant, "PX", 60000); err != nil {
		t.Fatal(err)
	}
	if st, err := opLk.Inspect(ctx, "rl"); err != nil || st.Holder != nil || st.Kind != "" {
		t.Fatalf("minority remnant: %+v, %v", st, err)
	}
	if err := opLk.ForceRelease(ctx, "rl", "remnant"); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("minority remnant: %v, want ErrNotHeld", err)
	}
	if n := intReply(t, srvs[2], "EXISTS", "locktag:{rl}"); n != 0 {
		t.Fatal("remnant left behind")
	}

	for _, s := range srvs[:3] {
		s.Stop()
	}
	if err := opLk.ForceRelease(ctx, "rl", "down"); !errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("majority down: %v, want ErrUnavailable", err)
	}
	if _, err := opLk.Inspect(ctx, "rl"); !errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("Inspect, majority down: %v, want ErrUnavailable", err)
	}
}
