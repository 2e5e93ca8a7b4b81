package locker_test

import (
	"context"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// TestUncontendedAllocations holds the uncontended lock+unlock to its
// allocation budget: at most 15 without an Observer (the default),
// pipelined (the default) or pooled (the SDK's budget is checked in
// internal/integration/otel). Measured with the real driver against a real
// server; counts, not times, so a loaded machine cannot fail it.
func TestUncontendedAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name   string
		lk     *locker.Locker
		budget float64
	}{
		{"default", newLocker(t, srv), 15},
		{"pooled", newPipelined(t, srv, 0), 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := locker.Params{TTL: 10 * time.Second, Wait: time.Minute, Name: "allocs"}
			var failed error
			n := testing.AllocsPerRun(200, func() {
				le, err := tc.lk.Obtain(ctx, "allocs", p)
				if err != nil {
					failed = err
					return
				}
				if err := le.Release(ctx); err != nil {
					failed = err
				}
			})
			if failed != nil {
				t.Fatal(failed)
			}
			t.Logf("%v allocations per lock+unlock (budget %v)", n, tc.budget)
			if n > tc.budget {
				t.Errorf("%v allocations per lock+unlock, budget %v", n, tc.budget)
			}
		})
	}
}

// TestUncontendedKindAllocations holds a semaphore's and a read/write
// lock's uncontended take+release to the mutex's budget (15, without
// an Observer): their names, argument lists and call context live in the
// lease's storage as a mutex's do. (Measured at the budget's commit: 10
// or 11 each, as the mutex.)
func TestUncontendedKindAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	for _, tc := range []struct {
		name string
		p    locker.Params
	}{
		{"semaphore", locker.Params{Limit: 4}},
		{"read", locker.Params{Mode: locker.Read}},
		{"write", locker.Params{Mode: locker.Write}},
		{"semaphore labelled", locker.Params{Limit: 4, Label: "job 7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := tc.p
			p.TTL, p.Wait, p.Name = 10*time.Second, time.Minute, "allocs"
			var failed error
			n := testing.AllocsPerRun(200, func() {
				le, err := lk.Obtain(ctx, "allocs", p)
				if err != nil {
					failed = err
					return
				}
				if err := le.Release(ctx); err != nil {
					failed = err
				}
			})
			if failed != nil {
				t.Fatal(failed)
			}
			if n > 15 {
				t.Errorf("%v allocations per take+release, budget 15 (the mutex's)", n)
			}
			t.Logf("%v allocations per take+release", n)
		})
	}
}
