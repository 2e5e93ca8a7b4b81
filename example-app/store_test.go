package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktag/locktag/locker"
)

// A holder that lost its lock (its lease ran out while it was paused) cannot
// overwrite the stock written by the holder after it: the store's fence
// rejects its older token.
func TestStaleWriteRejected(t *testing.T) {
	_, lk := realRedis(t)
	db := newStore(0, map[string]int64{"plum": 10})
	ctx := testCtx(t)

	slow, err := lk.Obtain(ctx, itemLock("plum"), locker.Params{TTL: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	it, _ := db.Get("plum") // reads 10, then "pauses" past its lease
	<-slow.Context().Done()
	if !errors.Is(context.Cause(slow.Context()), locker.ErrLockLost) {
		t.Fatalf("cause %v, want ErrLockLost", context.Cause(slow.Context()))
	}

	next, err := lk.Obtain(ctx, itemLock("plum"), locker.Params{Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = next.Release(ctx) }()
	fresh, _ := db.Get("plum")
	fresh.Stock--
	if err := db.Put(next.Context(), fresh, next.Token()); err != nil {
		t.Fatal(err)
	}

	it.Stock-- // the slow holder's write, with its old token (on a live context)
	if err := db.Put(ctx, it, slow.Token()); !errors.Is(err, locker.ErrStaleToken) {
		t.Fatalf("stale write: %v, want ErrStaleToken", err)
	}
	if got, _ := db.Get("plum"); got.Stock != 9 {
		t.Fatalf("stock %d, want 9", got.Stock)
	}
}

// A write whose lock is lost during the store's latency stops with the
// lease's cause instead of writing.
func TestPutStopsWhenLockLost(t *testing.T) {
	db := newStore(time.Hour, map[string]int64{"plum": 1})
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(locker.ErrLockLost)
	if err := db.Put(ctx, item{SKU: "plum"}, 7); !errors.Is(err, locker.ErrLockLost) {
		t.Fatalf("Put: %v, want ErrLockLost", err)
	}
	if got, _ := db.Get("plum"); got.Stock != 1 {
		t.Fatalf("stock %d: the write happened", got.Stock)
	}
}
