package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktag/locktag/locker"
)

// A holder that lost its lock (its lease ran out while it was paused between
// reading the stock and writing it back) cannot write back what it computed:
// the newer holder's claim on the row refuses its write, whether the newer
// holder has written already or has only read. Fencing only the write would
// admit the paused holder's write in the second case (its token is newer
// than the row's last write) and lose a sale.
func TestPausedHolderReadModifyWrite(t *testing.T) {
	tests := []struct {
		name string
		// newerWritesFirst: the newer holder writes before the paused
		// holder resumes; otherwise the paused holder writes between the
		// newer holder's read and its write.
		newerWritesFirst bool
	}{
		{"paused holder writes between the newer holder's read and write", false},
		{"newer holder writes before the paused holder resumes", true},
	}
	_, lk := realRedis(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := newStore(0, map[string]int64{"plum": 10})
			ctx := testCtx(t)

			slow, err := lk.Obtain(ctx, itemLock("plum"), locker.Params{TTL: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			it, err := db.Claim("plum", slow.Token()) // reads 10, then "pauses" past its lease
			if err != nil {
				t.Fatal(err)
			}
			<-slow.Context().Done()
			if !errors.Is(context.Cause(slow.Context()), locker.ErrLockLost) {
				t.Fatalf("cause %v, want ErrLockLost", context.Cause(slow.Context()))
			}

			next, err := lk.Obtain(ctx, itemLock("plum"), locker.Params{Wait: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = next.Release(ctx) }()
			fresh, err := db.Claim("plum", next.Token())
			if err != nil {
				t.Fatal(err)
			}
			if fresh.Stock != 10 {
				t.Fatalf("newer holder read stock %d, want 10", fresh.Stock)
			}
			fresh.Stock--
			fresh.Sold++
			writeNext := func() {
				if err := db.Put(next.Context(), fresh, next.Token()); err != nil {
					t.Fatalf("newer holder's write: %v", err)
				}
			}
			if tt.newerWritesFirst {
				writeNext()
			}
			it.Stock-- // the slow holder resumes and writes, on a live context
			it.Sold++
			if err := db.Put(ctx, it, slow.Token()); !errors.Is(err, locker.ErrStaleToken) {
				t.Fatalf("paused holder's write: %v, want ErrStaleToken", err)
			}
			if !tt.newerWritesFirst {
				writeNext()
			}
			if got, _ := db.Get("plum"); got.Stock != 9 || got.Sold != 1 {
				t.Fatalf("stock %d, sold %d; want 9, 1", got.Stock, got.Sold)
			}
			// And the paused holder cannot read again with its old token.
			if _, err := db.Claim("plum", slow.Token()); !errors.Is(err, locker.ErrStaleToken) {
				t.Fatalf("paused holder's second read: %v, want ErrStaleToken", err)
			}
		})
	}
}

// A write without a Claim first is refused: a mistake in the caller.
func TestPutWithoutClaim(t *testing.T) {
	db := newStore(0, map[string]int64{"plum": 1})
	it, _ := db.Get("plum")
	it.Stock--
	if err := db.Put(context.Background(), it, 7); !errors.Is(err, locker.ErrNotClaimed) {
		t.Fatalf("Put: %v, want ErrNotClaimed", err)
	}
	if got, _ := db.Get("plum"); got.Stock != 1 {
		t.Fatalf("stock %d: the write happened", got.Stock)
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
