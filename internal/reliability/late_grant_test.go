package reliability

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/reliability/faults"
	"github.com/locktag/locktag/locker"
)

// TestLateGrantConfirmed: a waiter's process is frozen (SIGSTOP) when the
// holder hands the lock to it, and resumes three quarters into the grant
// window — the grant is still valid, but most of it has gone. The waiter
// confirms the grant before its Obtain returns, so it holds the lock on its
// full lease: another Locker queued behind it does not get the lock when
// the window would have ended, and the resumed holder's release succeeds.
//
// Before the fix, the new holder scheduled its first renewal a third of
// the window after it heard of the grant: past the window's end, so the
// lock went to the next waiter while the first still believed it held it
// (the other Locker obtained the lock, and the resumed holder's release
// answered "not held").
func TestLateGrantConfirmed(t *testing.T) {
	srv := redistest.Start(t)
	const (
		window = 6 * time.Second
		frozen = window * 3 / 4 // the fault: the new holder cannot run
	)
	key := "late-grant"
	ctx := context.Background()
	lk := newLocker(t, srv.Pool(t), locker.WithGrantWindow(window))
	first, err := lk.Obtain(ctx, key, locker.Params{})
	if err != nil {
		t.Fatal(err)
	}

	resetStats(t, srv)
	// The child's calls get 5s, not the usual 1s: a resumed process on a
	// loaded machine (a whole test suite under -race) may wait for a CPU
	// for over a second, and this test is about the grant's confirmation,
	// not about the call bound.
	ch := faults.StartChild(t, "holder", childEnv{addr: srv.Addr(), key: key, wait: time.Minute, call: 5 * time.Second}.env()...)
	// Frozen while it waits, not while a call of its own is on its way: its
	// try queued it, it listens on the key's channel, and its re-check for a
	// release before it listened (a script call of its own) was answered.
	eventually(t, 30*time.Second, "the child's waiter queued and listening", func() bool {
		n, err := srv.Do("ZCARD", lockKeys(key)[1])
		if err != nil || n.(int64) != 1 {
			return false
		}
		subs, err := redis.Values(srv.Do("PUBSUB", "NUMSUB", lockKeys(key)[0]+":c"))
		if err != nil || len(subs) != 2 || subs[1].(int64) != 1 {
			return false
		}
		calls := commandCalls(t, srv)
		return calls["evalsha"]+calls["eval"] >= 2
	})
	ch.Stop()
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(frozen)
	ch.Cont()
	for {
		line, ok := ch.Next(30 * time.Second)
		if !ok {
			t.Fatalf("the child exited before it held the lock; stderr: %s", ch.Stderr())
		}
		if strings.HasPrefix(line, "FAILED") {
			t.Fatalf("the resumed waiter did not get the lock: %s", line)
		}
		if strings.HasPrefix(line, "HELD") {
			break
		}
	}

	// Queued behind the resumed holder for longer than the rest of the
	// window: it must not be handed a lock that is still held.
	other := newLocker(t, srv.Pool(t))
	le, err := other.Obtain(ctx, key, locker.Params{Wait: window * 2 / 3})
	if err == nil {
		_ = le.Release(ctx)
		t.Fatal("another Locker obtained the lock while the resumed holder held it: the late grant was not confirmed")
	}
	if !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("other Obtain: %v, want ErrNotObtained", err)
	}
	ch.Send("release")
	if got := ch.Expect("RELEASED", 30*time.Second); got != "ok" {
		t.Fatalf("resumed holder's release: %q, want ok", got)
	}
}
