package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// TestKindReleaseQueuedFlag: a semaphore's or read/write lock's release
// looks at the queue only when the details hash says waiters may be queued
// ("Q", see sem_release.lua). A waiter that queues sets it, so the
// holder's release hands on to that waiter at once (were the flag missing,
// the waiter would sleep until the holder's 30s lease ends, past its
// wait); a release that finds the queue gone drops it; and a waiter that
// gave up leaves a flag that only costs the next release a look.
func TestKindReleaseQueuedFlag(t *testing.T) {
	for _, tc := range []struct {
		name, suffix string
		p            locker.Params
	}{
		{"semaphore", ":s", locker.Params{Limit: 1}},
		{"write", ":rw", locker.Params{Mode: locker.Write}},
		{"read behind write", ":rw", locker.Params{Mode: locker.Read}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			holder, waiter := newLocker(t, srv), newLocker(t, srv)
			ctx := context.Background()
			base := "locktag:{k}" + tc.suffix
			flag := func() int64 { return intReply(t, srv, "HEXISTS", base+":w", "Q") }
			hp := tc.p
			if tc.p.Mode == locker.Read {
				hp.Mode = locker.Write // a reader queues only behind a writer
			}

			// A waiter that gives up: the flag stays until a release
			// finds the queue gone.
			a := mustObtain(t, holder, ctx, "k", hp)
			gaveUp := tc.p
			gaveUp.Wait = 50 * time.Millisecond
			if _, err := waiter.Obtain(ctx, "k", gaveUp); !errors.Is(err, locker.ErrNotObtained) {
				t.Fatalf("waiter on a held lock: %v, want ErrNotObtained", err)
			}
			if flag() != 1 {
				t.Fatal("a queued waiter did not set Q")
			}
			if err := a.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if flag() != 0 {
				t.Fatal("a release that found the queue gone left Q")
			}

			// A waiter that stays is handed the lock by the release.
			a = mustObtain(t, holder, ctx, "k", hp)
			got := make(chan error, 1)
			var b *locker.Lease
			go func() {
				p := tc.p
				p.Wait = 10 * time.Second
				le, err := waiter.Obtain(ctx, "k", p)
				b = le
				got <- err
			}()
			eventually(t, 10*time.Second, "the waiter queued", func() bool {
				return intReply(t, srv, "ZCARD", base+":q") == 1
			})
			if flag() != 1 {
				t.Fatal("a queued waiter did not set Q")
			}
			if err := a.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-got; err != nil {
				t.Fatalf("the queued waiter: %v, want the lock handed on by the release", err)
			}
			if err := b.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if flag() != 0 {
				t.Fatal("the last release left Q")
			}
			if n := intReply(t, srv, "EXISTS", base, base+":q"); n != 0 {
				t.Fatalf("%d of the holders and queue keys left after the last release", n)
			}
		})
	}
}
