package driver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktag/locktag/locker/driver"
)

// TestConfirmations: confirmations wake Subscribe calls oldest first per
// channel; ending the listener fails the waiting and the later ones, and
// only the first End reports it.
func TestConfirmations(t *testing.T) {
	c := driver.NewConfirmations()
	ctx := context.Background()
	a1, _ := c.Expect("a")
	a2, _ := c.Expect("a")
	b, _ := c.Expect("b")
	c.Confirmed("a")
	if err := c.Await(ctx, a1); err != nil {
		t.Fatalf("first a: %v", err)
	}
	select {
	case <-a2:
		t.Fatal("one confirmation woke two subscribers")
	default:
	}
	c.Confirmed("a")
	if err := c.Await(ctx, a2); err != nil {
		t.Fatalf("second a: %v", err)
	}
	c.Confirmed("nobody") // ignored
	cctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	if err := c.Await(cctx, b); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("unconfirmed b: %v", err)
	}
	if !c.End() || c.End() {
		t.Fatal("End must report true once, then false")
	}
	if err := c.Await(ctx, b); !errors.Is(err, driver.ErrListenerClosed) {
		t.Fatalf("b after End: %v", err)
	}
	if _, err := c.Expect("c"); !errors.Is(err, driver.ErrListenerClosed) || !c.Ended() {
		t.Fatalf("Expect after End: %v", err)
	}
}
