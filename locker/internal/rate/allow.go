package rate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/lockerr"
)

// maxBucket bounds how far ahead a bucket's debt may run (burst ×
// interval + wait): the script counts microseconds in float64, exact far
// beyond this.
const maxBucket = 10 * 365 * 24 * time.Hour

// Check returns why limit per period, a burst of burst (0: limit) and a
// wait of wait are out of bounds, wrapping lockerr.ErrBadRate, or nil.
func Check(limit int, period time.Duration, burst int, wait time.Duration) error {
	bad := func(why string) error { return fmt.Errorf("%w: %d per %v: %s", lockerr.ErrBadRate, limit, period, why) }
	switch {
	case limit < 1:
		return bad("Limit must be at least 1")
	case period < time.Millisecond:
		return bad("Period must be at least 1ms")
	case period/time.Duration(limit) < time.Microsecond:
		return bad("more than one request per microsecond")
	case burst < 0:
		return bad("Burst must not be negative")
	case wait < 0:
		return bad("Wait must not be negative")
	}
	if burst == 0 {
		burst = limit
	}
	if time.Duration(burst) > (maxBucket-wait)/(period/time.Duration(limit)) {
		return bad(fmt.Sprintf("a burst of %d (and Wait) takes more than %v to refill", burst, maxBucket))
	}
	return nil
}

// Result is what one Allow decided (locker.RateDecision).
type Result struct {
	Remaining  int
	RetryAfter time.Duration
	Reset      time.Duration
	Waited     time.Duration
}

// Allow decides one request against key's rate (terms checked by Check):
// nil when admitted; lockerr.ErrRateLimited when refused, joined with
// ctx's error when ctx ended first; lockerr.ErrUnavailable when Redis
// failed. A slot within wait (and ctx's deadline) is reserved at once, and
// Allow sleeps until it comes.
func Allow(ctx context.Context, nd *backend.Node, key string, period time.Duration, limit, burst int, wait time.Duration) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, errors.Join(lockerr.ErrRateLimited, err)
	}
	if burst == 0 {
		burst = limit
	}
	maxDelay := wait
	if dl, ok := ctx.Deadline(); ok && maxDelay > 0 {
		maxDelay = max(min(maxDelay, time.Until(dl)), 0)
	}
	d, err := Take(ctx, nd, key, period, limit, burst, maxDelay)
	if err != nil {
		if ce := ctx.Err(); ce != nil {
			return Result{}, errors.Join(lockerr.ErrRateLimited, ce)
		}
		return Result{}, lockerr.Unavailable(err)
	}
	if !d.Admitted {
		return Result{RetryAfter: d.Wait, Reset: d.Reset}, lockerr.ErrRateLimited
	}
	r := Result{Remaining: d.Remaining, Reset: d.Reset}
	if d.Wait > 0 {
		// The slot is ours: wait for it, not for anyone's signal.
		t := time.NewTimer(d.Wait)
		defer t.Stop()
		select {
		case <-t.C:
			r.Waited = d.Wait
		case <-ctx.Done():
			return Result{Reset: d.Reset}, errors.Join(lockerr.ErrRateLimited, ctx.Err())
		}
	}
	return r, nil
}
