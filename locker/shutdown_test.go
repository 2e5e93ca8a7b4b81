package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// TestShutdownHandsOver: a Locker that shuts down cancels its holders'
// contexts (cause matching ErrLockLost and ErrClosed), ends its own
// waiting Obtain calls with ErrClosed and takes them off the queue, and
// releases what is still held when its grace is over, so the next waiter,
// in another Locker, gets the lock at once. Obtain afterwards returns
// ErrClosed; Release of a lease the shutdown released says so.
func TestShutdownHandsOver(t *testing.T) {
	srv := redistest.Start(t)
	closing := newLocker(t, srv)
	other := newLocker(t, srv)
	ctx := context.Background()

	// A cooperative holder releases when its context ends; a careless one
	// never does.
	coop := mustObtain(t, closing, ctx, "shut:coop", locker.Params{})
	careless := mustObtain(t, closing, ctx, "shut:careless", locker.Params{})
	cctx := coop.Context()
	_ = careless.Context()
	released := make(chan error, 1)
	go func() {
		<-cctx.Done()
		released <- coop.Release(context.Background())
	}()
	// A waiter of the closing Locker, queued behind the other Locker's hold.
	held := mustObtain(t, other, ctx, "shut:queued", locker.Params{})
	waited := make(chan error, 1)
	go func() {
		_, err := closing.Obtain(ctx, "shut:queued", locker.Params{Wait: time.Minute})
		waited <- err
	}()
	eventually(t, 10*time.Second, "the closing Locker's waiter queued", func() bool { return queueLen(t, srv, "shut:queued") == 1 })
	// The other Locker waits for both locks.
	got := make(chan string, 2)
	for _, key := range []string{"shut:coop", "shut:careless"} {
		go func() {
			le, err := other.Obtain(ctx, key, locker.Params{Wait: time.Minute})
			if err != nil {
				got <- key + ": " + err.Error()
				return
			}
			got <- key
			_ = le.Release(ctx)
		}()
	}
	eventually(t, 10*time.Second, "the other Locker's waiters queued", func() bool {
		return queueLen(t, srv, "shut:coop") == 1 && queueLen(t, srv, "shut:careless") == 1
	})

	sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := closing.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	took := time.Since(start)
	if cause := context.Cause(cctx); !errors.Is(cause, locker.ErrLockLost) || !errors.Is(cause, locker.ErrClosed) {
		t.Fatalf("the holder's context ended with %v, want ErrLockLost and ErrClosed", cause)
	}
	if err := <-released; err != nil {
		t.Fatalf("the cooperative holder's Release during the shutdown: %v", err)
	}
	if err := <-waited; !errors.Is(err, locker.ErrClosed) {
		t.Fatalf("the closing Locker's waiter: %v, want ErrClosed", err)
	}
	if n := queueLen(t, srv, "shut:queued"); n != 0 {
		t.Fatalf("the closing Locker's waiter left %d queue entries", n)
	}
	for range 2 {
		select {
		case key := <-got:
			if key != "shut:coop" && key != "shut:careless" {
				t.Fatal(key)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the other Locker did not get both locks after the shutdown")
		}
	}
	t.Logf("Shutdown took %v (grace 300ms, one careless holder)", took.Round(time.Millisecond))
	if err := careless.Release(ctx); !errors.Is(err, locker.ErrClosed) || !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("Release after the shutdown released it: %v, want ErrClosed and ErrNotHeld", err)
	}
	if _, err := closing.Obtain(ctx, "shut:after", locker.Params{}); !errors.Is(err, locker.ErrClosed) {
		t.Fatalf("Obtain after Shutdown: %v, want ErrClosed", err)
	}
	if err := closing.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	_ = held.Release(ctx)
}
