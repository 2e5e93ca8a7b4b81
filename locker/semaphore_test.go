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

// semWorkload runs 3*limit goroutines over two Lockers (as if two
// processes), each taking a permit of a semaphore of limit on one key and
// holding it until fill holders were in at once (or 300ms passed), and returns the
// largest number of holders seen at once.
func semWorkload(t *testing.T, lockers []*locker.Locker, limit, fill int) int32 {
	t.Helper()
	var holders, peak atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 3*limit)
	for w := range 3 * limit {
		lk := lockers[w%len(lockers)]
		wg.Go(func() {
			le, err := lk.Obtain(context.Background(), "tenant", locker.Params{Limit: limit, Wait: 20 * time.Second})
			if err != nil {
				errs <- err
				return
			}
			h := holders.Add(1)
			for p := peak.Load(); h > p && !peak.CompareAndSwap(p, h); p = peak.Load() {
			}
			for until := time.Now().Add(300 * time.Millisecond); peak.Load() < int32(fill) && time.Now().Before(until); {
				time.Sleep(time.Millisecond) // the work: stay until the others are in
			}
			holders.Add(-1)
			if err := le.Release(context.Background()); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return peak.Load()
}

// TestSemaphoreLimit: holders never exceed the limit and do reach it.
func TestSemaphoreLimit(t *testing.T) {
	srv := redistest.Start(t)
	lks := []*locker.Locker{newLocker(t, srv), newLocker(t, srv)}
	if peak := semWorkload(t, lks, 3, 3); peak != 3 {
		t.Fatalf("peak holders %d, want exactly the limit 3", peak)
	}
}

// TestSemaphoreLimitControl: the same detector catches a broken limit — a
// semaphore of 4 where 3 was meant.
func TestSemaphoreLimitControl(t *testing.T) {
	srv := redistest.Start(t)
	lks := []*locker.Locker{newLocker(t, srv), newLocker(t, srv)}
	if peak := semWorkload(t, lks, 4, 4); peak <= 3 {
		t.Fatalf("control: peak holders %d, the detector missed a limit of 4 where 3 was meant", peak)
	}
}

// TestSemaphoreBusy: a full semaphore refuses at once without a wait, a
// permit is reentrant through the context, and a mutex of the same key is
// apart from it.
func TestSemaphoreBusy(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	p := locker.Params{Limit: 2}
	a := mustObtain(t, lk, ctx, "s", p)
	b := mustObtain(t, lk, ctx, "s", p)
	if a.Token() == b.Token() {
		t.Fatal("two permits share a fencing token")
	}
	if _, err := lk.Obtain(ctx, "s", p); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("third permit of 2: %v, want ErrNotObtained", err)
	}
	in := mustObtain(t, lk, a.Context(), "s", p)
	if in.Holds() != 2 {
		t.Fatalf("re-entered holds %d, want 2", in.Holds())
	}
	m := mustObtain(t, lk, ctx, "s", locker.Params{})
	for _, le := range []*locker.Lease{m, in, a} {
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c := mustObtain(t, lk, ctx, "s", p)
	if err := a.Release(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("second release: %v, want ErrNotHeld", err)
	}
	_ = b.Release(ctx)
	_ = c.Release(ctx)
	if _, err := lk.Obtain(ctx, "s", locker.Params{Limit: -1}); !errors.Is(err, locker.ErrBadLimit) {
		t.Fatalf("limit -1: %v", err)
	}
}

// TestSemaphoreCrashedHolder: a holder that stops renewing (its process
// gone: a fixed lease never released) frees its permit within its lease
// plus slack, and a waiter gets it.
func TestSemaphoreCrashedHolder(t *testing.T) {
	srv := redistest.Start(t)
	crashed, lk := newLocker(t, srv), newLocker(t, srv)
	ctx := context.Background()
	_ = mustObtain(t, crashed, ctx, "c", locker.Params{Limit: 1, TTL: 300 * time.Millisecond}) // never released
	start := time.Now()
	le := mustObtain(t, lk, ctx, "c", locker.Params{Limit: 1, Wait: 5 * time.Second})
	defer le.Release(ctx)
	if took := time.Since(start); took > 300*time.Millisecond+time.Second {
		t.Fatalf("the crashed holder's permit freed after %v, want within its 300ms lease + 1s", took)
	}
}

// TestSemaphoreFIFO: waiters queued in order get the permits in that
// order, across Lockers.
func TestSemaphoreFIFO(t *testing.T) {
	srv := redistest.Start(t)
	// FIFO holds while no grant lapses: a long grant window keeps a
	// waiter starved on a loaded machine (-race, 2 cores) from being cut
	// off and queued again at the back.
	win := locker.WithGrantWindow(5 * time.Second)
	lks := []*locker.Locker{newLocker(t, srv, win), newLocker(t, srv, win), newLocker(t, srv, win)}
	ctx := context.Background()
	p := locker.Params{Limit: 1, Wait: 30 * time.Second}
	first := mustObtain(t, lks[0], ctx, "fifo", p)
	const n = 6
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			le, err := lks[i%3].Obtain(ctx, "fifo", p)
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			_ = le.Release(ctx)
		})
		eventually(t, 5*time.Second, "waiter queued", func() bool {
			return intReply(t, srv, "ZCARD", "locktag:{fifo}:s:q") == int64(i+1)
		})
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(order)
	want := 0
	for got := range order {
		if got != want {
			t.Fatalf("permit %d went to waiter %d", want, got)
		}
		want++
	}
	if want != n {
		t.Fatalf("%d of %d waiters got a permit", want, n)
	}
}

// TestSemaphoreRedlockRefused: a Redlock Locker refuses semaphores, by
// Supports (which guards call when built) and by Obtain.
func TestSemaphoreRedlockRefused(t *testing.T) {
	lk := newRedlock(t, redistest.StartN(t, 3))
	p := locker.Params{Limit: 2}
	if err := lk.Supports(p); !errors.Is(err, locker.ErrKindUnsupported) {
		t.Fatalf("Supports: %v, want ErrKindUnsupported", err)
	}
	if _, err := lk.Obtain(context.Background(), "s", p); !errors.Is(err, locker.ErrKindUnsupported) {
		t.Fatalf("Obtain: %v, want ErrKindUnsupported", err)
	}
	if err := lk.Supports(locker.Params{}); err != nil {
		t.Fatalf("Supports(mutex): %v", err)
	}
}

// TestSemaphoreWatchdog: a permit's watchdog lease is renewed past its
// length while its holder lives; a lost permit cancels its context.
func TestSemaphoreWatchdog(t *testing.T) {
	srv := redistest.Start(t)
	// Renewed five times per lease, so a loaded machine (-race, 2 cores)
	// that delays a renewal or two does not lose the permit.
	const lease = time.Second
	lk := newLocker(t, srv, locker.WithWatchdog(lease, lease/5))
	ctx := context.Background()
	le := mustObtain(t, lk, ctx, "w", locker.Params{Limit: 1})
	start := time.Now()
	eventually(t, 10*time.Second, "three leases passed", func() bool { return time.Since(start) > 3*lease })
	if _, err := lk.Obtain(ctx, "w", locker.Params{Limit: 1}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("after three leases: %v, want ErrNotObtained (the permit renewed)", err)
	}
	if d, err := le.TTL(ctx); err != nil || d <= 0 {
		t.Fatalf("TTL: %v %v", d, err)
	}
	lctx := le.Context()
	intReply(t, srv, "DEL", "locktag:{w}:s") // someone took the permits away
	eventually(t, 5*time.Second, "lost permit cancels the context", func() bool {
		return errors.Is(context.Cause(lctx), locker.ErrLockLost)
	})
}
