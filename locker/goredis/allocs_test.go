package goredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// pairBudget is the allocations an uncontended lock+unlock through this
// driver may make, the locker's own included.
const pairBudget = 12

// TestPairAllocations holds an uncontended Obtain + Release through this
// driver to pairBudget: on a client configured as docs/scale-out.md
// recommends, on one with go-redis's defaults (no ContextTimeoutEnabled,
// retries) and over RESP2. Measured against a real server; counts, not
// times, so a loaded machine cannot fail it.
func TestPairAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name string
		mod  func(*redis.Options)
	}{
		{"recommended", func(*redis.Options) {}},
		{"defaults", func(o *redis.Options) { o.ContextTimeoutEnabled, o.MaxRetries = false, 0 }},
		{"RESP2", func(o *redis.Options) { o.Protocol = 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lk := newLocker(t, plainClient(t, srv, tc.mod))
			ctx := context.Background()
			p := locker.Params{TTL: 10 * time.Second, Wait: time.Minute}
			var failed error
			pair := func() {
				le, err := lk.Obtain(ctx, "allocs", p)
				if err != nil {
					failed = err
					return
				}
				if err := le.Release(ctx); err != nil {
					failed = err
				}
			}
			for range 10 { // the driver's connections taken and settled
				pair()
			}
			n := testing.AllocsPerRun(200, pair)
			if failed != nil {
				t.Fatal(failed)
			}
			t.Logf("%v allocations per lock+unlock (budget %v)", n, pairBudget)
			if n > pairBudget {
				t.Errorf("%v allocations per lock+unlock, budget %v", n, pairBudget)
			}
		})
	}
}
