package multi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/names"
	"github.com/locktag/locktag/locker/internal/node"
)

// MaxKeys is the most distinct keys one call takes (locker.MaxKeys).
const MaxKeys = 16

// Keys returns keys sorted and without duplicates (a new slice).
func Keys(keys []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(keys)))
}

// Check returns why the deduplicated keys cannot be taken, or nil.
func Check(keys []string) error {
	switch {
	case len(keys) == 0 || keys[0] == "":
		return lockerr.ErrEmptyKey
	case len(keys) > MaxKeys:
		return fmt.Errorf("%w: %d distinct keys, at most %d", lockerr.ErrTooManyKeys, len(keys), MaxKeys)
	}
	return nil
}

// Take takes keys in order with take. With wait > 0 all keys share one
// budget from start: a later key gets what is left. On the first failure
// it undoes the parts taken, last first, and returns the error.
func Take[P any](keys []string, wait time.Duration, start time.Time, take func(key string, wait time.Duration) (P, error), undo func(P)) ([]P, error) {
	parts := make([]P, 0, len(keys))
	rollback := func() {
		for _, pt := range slices.Backward(parts) {
			undo(pt)
		}
	}
	for _, key := range keys {
		w := wait
		if wait > 0 {
			if w = time.Until(start.Add(wait)); w <= 0 {
				rollback()
				return nil, lockerr.ErrNotObtained
			}
		}
		pt, err := take(key, w)
		if err != nil {
			rollback()
			return nil, err
		}
		parts = append(parts, pt)
	}
	return parts, nil
}

// Fast tries the one-script path: every key (ns, tokens) in one round
// trip, for ttl. done is false when the caller must take the keys one by
// one: the path is off, or some key is busy and wait asks to wait. sent is
// when the call was sent, the grant's start.
func Fast(ctx context.Context, mf node.MultiFast, ns []names.Names, tokens []string, ttl time.Duration, wait bool) (fences []int64, sent time.Time, done bool, err error) {
	sent = time.Now()
	fences, ok, err := mf.TakeAll(ctx, ns, tokens, ttl)
	switch {
	case err != nil:
		mf.DropAll(ns, tokens, err)
		return nil, sent, true, lockerr.ObtainFailed(ctx, err)
	case !ok && (wait || !mf.FastOn()):
		return nil, sent, false, nil
	case !ok:
		return nil, sent, true, lockerr.ErrNotObtained // busy: nothing was taken
	}
	if time.Until(sent.Add(ttl)) <= 0 {
		mf.DropAll(ns, tokens, nil)
		return nil, sent, true, lockerr.Late
	}
	return fences, sent, true, nil
}

// Release runs release on every part at once: their round trips overlap
// (a pipelining driver sends them together), so a release of N keys costs
// about one round trip, not N. It returns the parts' errors, each naming
// its key's place.
func Release[P any](parts []P, release func(P) error) error {
	res := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, pt := range parts[1:] {
		wg.Go(func() { res[i+1] = release(pt) })
	}
	res[0] = release(parts[0])
	wg.Wait()
	var errs []error
	for i, err := range res {
		if err != nil {
			errs = append(errs, fmt.Errorf("key %d of %d: %w", i+1, len(parts), err))
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// Shortest is the shortest of the parts' remaining leases; the first
// error ends it.
func Shortest[P any](ctx context.Context, parts []P, ttl func(P, context.Context) (time.Duration, error)) (time.Duration, error) {
	least := time.Duration(-1)
	for _, pt := range parts {
		d, err := ttl(pt, ctx)
		if err != nil {
			return 0, err
		}
		if least < 0 || d < least {
			least = d
		}
	}
	return least, nil
}
