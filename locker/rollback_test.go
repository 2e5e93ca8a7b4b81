package locker_test

import (
	"context"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
)

// TestTokenAfterRollback: a failover to a replica that had not caught up
// rolls a lock's value back to an older holder's. The next token minted
// from that value must still be above every token handed out before, as
// the robustness suite's failover nemesis found (seed 8): a hand-over
// from the rolled-back value minted the old token + 1, the token the old
// master had already given the next holder. The roll-back is made by
// writing the older value back.
func TestTokenAfterRollback(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	const key = "rolled"
	raw := "locktag:{" + key + "}"

	a, err := lk.Obtain(ctx, key, locker.Params{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	older, err := redis.String(srv.Do("GET", raw)) // what the replica kept
	if err != nil {
		t.Fatal(err)
	}
	// obtain takes key with a wait, in the background.
	obtain := func() <-chan *locker.Lease {
		got := make(chan *locker.Lease, 1)
		go func() {
			le, err := lk.Obtain(ctx, key, locker.Params{TTL: 30 * time.Second, Wait: 10 * time.Second})
			if err != nil {
				t.Error(err)
			}
			got <- le
		}()
		testwait.Within(t, 5*time.Second, "a waiter queued", func() bool {
			st, err := lk.Inspect(ctx, key)
			return err == nil && len(st.Waiters) == 1
		})
		return got
	}
	next := obtain()
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	b := testwait.Recv(t, next, "the hand-over")
	if b.Token() <= a.Token() {
		t.Fatalf("hand-over token %d, want above %d", b.Token(), a.Token())
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// The failover: the lock's value as the replica had it, a's.
	if _, err := srv.Do("SET", raw, older, "PX", 30000); err != nil {
		t.Fatal(err)
	}
	after := obtain()
	if err := lk.ForceRelease(ctx, key, "the old master's holder is gone"); err != nil {
		t.Fatal(err)
	}
	c := testwait.Recv(t, after, "the hand-over from the rolled-back value")
	defer c.Release(ctx)
	if c.Token() <= b.Token() {
		t.Fatalf("after the roll-back: token %d, not above %d, which the old master handed out (a's was %d)", c.Token(), b.Token(), a.Token())
	}
}
