package locker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

func workload(t *testing.T, lockers []*locker.Locker, workers, iters int) (maxHolders int32, lost int64) {
	t.Helper()
	return lockertest.Workload(t, lockers, workers, iters)
}

// TestMutualExclusion: 64 goroutines over 4 Lockers with separate pools (as
// if 4 processes) on one key never overlap and lose no update.
func TestMutualExclusion(t *testing.T) {
	srv := redistest.Start(t)
	var lockers []*locker.Locker
	for range 4 {
		lockers = append(lockers, newLocker(t, srv))
	}
	peak, lost := workload(t, lockers, 64, 16)
	if peak != 1 || lost != 0 {
		t.Fatalf("mutual exclusion broken: %d holders at once, %d lost updates", peak, lost)
	}
}

// TestMutualExclusionControl proves the detector fires: the same workload
// with a broken lock (each Locker writes its own key prefix, so the four
// "processes" never see each other's locks) must show overlap.
func TestMutualExclusionControl(t *testing.T) {
	srv := redistest.Start(t)
	var lockers []*locker.Locker
	for i := range 4 {
		lockers = append(lockers, newLocker(t, srv, locker.WithKeyPrefix(fmt.Sprintf("broken%d:", i))))
	}
	peak, lost := workload(t, lockers, 64, 16)
	if peak < 2 || lost == 0 {
		t.Fatalf("detector missed a broken lock: %d holders at once, %d lost updates", peak, lost)
	}
}

// TestFIFO: waiters are served in arrival order, across Lockers.
func TestFIFO(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	a := newLocker(t, srv)
	holder := mustObtain(t, a, ctx, "q", locker.Params{TTL: 10 * time.Second})
	const n = 6
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		lk := newLocker(t, srv)
		wg.Go(func() {
			le, err := lk.Obtain(ctx, "q", locker.Params{TTL: 10 * time.Second, Wait: time.Minute})
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			_ = le.Release(ctx)
		})
		// Arrival order is what the test controls: the next waiter starts
		// only once this one is queued in Redis.
		eventually(t, 5*time.Second, "waiter queued", func() bool { return queueLen(t, srv, "q") == int64(i+1) })
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(order)
	want := 0
	for got := range order {
		if got != want {
			t.Fatalf("waiter %d served in place %d", got, want)
		}
		want++
	}
}
