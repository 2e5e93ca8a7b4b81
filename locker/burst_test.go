package locker_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// burstResult is what a flash-sale burst did.
type burstResult struct {
	peak        int32 // most holders seen at once
	sold        int64 // sales made
	stockLeft   int64
	unavailable int64 // failures that read as Redis unavailable
}

// burst starts buyers at once, spread over the lockers (as if separate
// processes, each with its own pool as the README configures it), at one
// key. Each buyer takes the lock (wait 5s), and if stock is left sells one
// unit in a read-modify-write that takes hold, then releases; it retries
// until the stock is sold out.
func burst(t *testing.T, lockers []*locker.Locker, buyers int, stock int64, hold time.Duration) burstResult {
	t.Helper()
	var holders, peak atomic.Int32
	var sold, unavailable atomic.Int64
	var soldOut atomic.Bool
	var left atomic.Int64 // read, then written: a broken lock loses updates
	left.Store(stock)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for b := range buyers {
		lk := lockers[b%len(lockers)]
		wg.Go(func() {
			<-start
			for !soldOut.Load() && ctx.Err() == nil {
				le, err := lk.Obtain(ctx, "item", locker.Params{TTL: 10 * time.Second, Wait: 5 * time.Second})
				switch {
				case errors.Is(err, locker.ErrUnavailable):
					unavailable.Add(1)
					continue
				case err != nil:
					continue // busy: try again
				}
				h := holders.Add(1)
				for p := peak.Load(); h > p && !peak.CompareAndSwap(p, h); p = peak.Load() {
				}
				if v := left.Load(); v > 0 {
					time.Sleep(hold) // the sale's work, between read and write
					left.Store(v - 1)
					sold.Add(1)
				} else {
					soldOut.Store(true)
				}
				holders.Add(-1)
				_ = le.Release(context.Background())
			}
		})
	}
	close(start)
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("burst did not sell out in time: %d of %d sold", sold.Load(), stock)
	}
	return burstResult{peak: peak.Load(), sold: sold.Load(), stockLeft: left.Load(), unavailable: unavailable.Load()}
}

func burstLockers(t *testing.T, srv *redistest.Server, n int, prefix func(i int) string) []*locker.Locker {
	var lockers []*locker.Locker
	for i := range n {
		var opts []locker.Option
		if prefix != nil {
			opts = append(opts, locker.WithKeyPrefix(prefix(i)))
		}
		lockers = append(lockers, newLocker(t, srv, opts...))
	}
	return lockers
}

// TestBurst: 1,500 buyers over 3 Lockers arrive at once at one key; every
// unit is sold exactly once (no overlap, no lost update), and no buyer sees
// Redis as unavailable while it is up.
func TestBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("1,500 concurrent buyers")
	}
	srv := redistest.Start(t)
	const buyers, stock = 1500, 400
	start := time.Now()
	r := burst(t, burstLockers(t, srv, 3, nil), buyers, stock, time.Millisecond)
	t.Logf("%d buyers: %d sold in %v, peak holders %d, %d unavailable", buyers, r.sold, time.Since(start).Round(time.Millisecond), r.peak, r.unavailable)
	if r.peak != 1 {
		t.Fatalf("%d holders at once", r.peak)
	}
	if r.sold != stock || r.stockLeft != 0 {
		t.Fatalf("sold %d with %d left of %d: units lost or sold twice", r.sold, r.stockLeft, stock)
	}
	if r.unavailable != 0 {
		t.Fatalf("%d acquisitions failed as unavailable while Redis was up", r.unavailable)
	}
	if n := queueLen(t, srv, "item"); n != 0 {
		t.Fatalf("%d waiters left queued", n)
	}
}

// TestBurstControl: the detector catches a broken lock — three Lockers
// with different key prefixes do not exclude each other.
func TestBurstControl(t *testing.T) {
	srv := redistest.Start(t)
	lockers := burstLockers(t, srv, 3, func(i int) string { return string(rune('a'+i)) + ":" })
	r := burst(t, lockers, 60, 30, time.Millisecond)
	if r.peak < 2 {
		t.Fatalf("peak holders %d with a broken lock: the detector does not fire", r.peak)
	}
}
