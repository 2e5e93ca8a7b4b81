package rueidis_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// testClusterMulti: a multi-key lock whose keys live on every master (one
// slot each) holds all of them, rolls back what it took when a later key
// stays busy, and does not deadlock against itself in opposite orders.
func testClusterMulti(t *testing.T, c *redistest.Cluster, byMaster map[*redistest.Server]string) {
	lk := newLocker(t, clusterClient(t, c))
	other := newLocker(t, clusterClient(t, c))
	ctx := context.Background()
	var keys []string
	for _, name := range byMaster {
		keys = append(keys, "multi-"+name)
	}
	slices.Sort(keys)

	le, err := lk.ObtainMany(ctx, keys, locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, err := other.Obtain(ctx, k, locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
			t.Fatalf("%s obtained while multi-held: %v", k, err)
		}
	}
	mustRelease(t, le)

	// The last key in the global order busy: the first two were taken,
	// then given back.
	busy := mustObtain(t, other, ctx, keys[2], locker.Params{})
	if _, err := lk.ObtainMany(ctx, []string{keys[2], keys[0], keys[1]}, locker.Params{Wait: 100 * time.Millisecond}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("ObtainMany with a busy key: %v", err)
	}
	for _, k := range keys[:2] {
		le := mustObtain(t, other, ctx, k, locker.Params{})
		mustRelease(t, le)
	}
	mustRelease(t, busy)

	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		order := slices.Clone(keys)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		l := []*locker.Locker{lk, other}[i%2]
		wg.Go(func() {
			for range 5 {
				le, err := l.ObtainMany(ctx, order, locker.Params{Wait: time.Minute})
				if err != nil {
					errs <- err
					return
				}
				if err := le.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
