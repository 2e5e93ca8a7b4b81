package locker

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/rate"
)

// Rate limits.
//
// A rate key named N lives in one string at prefix+"{N}:rate", apart from
// every lock of the same name. Each decision is one run of rate.lua: the
// generic cell rate algorithm (GCRA) on the server's clock, so processes
// whose clocks disagree share one exact limit. See docs/tags.md#rate-and-burst for
// why GCRA and not a sliding window.

// Rate-limit sentinel errors.
var (
	// ErrRateLimited: Allow refused the request: the key's rate is used up
	// and no slot comes within RateParams.Wait (joined with ctx.Err()
	// when the caller's context ended first, also while it waited for its
	// slot). RateDecision.RetryAfter says when the next request would be
	// admitted.
	ErrRateLimited = errors.New("locker: rate limited")
	// ErrBadRate: Allow or SupportsRate was given RateParams out of
	// bounds; the message says which.
	ErrBadRate = errors.New("locker: bad rate")
)

// maxRateBucket bounds how far ahead a bucket's debt may run (burst ×
// interval + wait): the script counts microseconds in float64, exact far
// beyond this.
const maxRateBucket = 10 * 365 * 24 * time.Hour

// RateParams are the terms of one Allow call: in the long run at most
// Limit requests per Period, and at most Burst at once after a quiet
// spell. Callers of one key should agree on the terms: each call is
// decided by its own against the key's shared state.
type RateParams struct {
	// Limit is the requests admitted per Period; at least 1.
	Limit int
	// Period is what Limit is counted over; at least 1ms, and at least
	// one microsecond per request (Period/Limit).
	Period time.Duration
	// Burst is the requests admitted at once when the key was not used
	// for a while (the bucket's size). Zero means Limit.
	Burst int
	// Wait, when above zero, admits a request whose slot comes within
	// Wait (and before ctx's deadline): the slot is reserved at once and
	// Allow returns when it comes. Zero refuses at once.
	Wait time.Duration
	// Name and Template are for spans and metrics, as in Params.
	Name, Template string
}

// RateDecision is what one Allow call decided.
type RateDecision struct {
	// Remaining is how many more requests would be admitted right after
	// this one; 0 for a refusal and for a request that waited.
	Remaining int
	// RetryAfter is, for a refusal, the time until the next request would
	// be admitted; 0 for an admission.
	RetryAfter time.Duration
	// Reset is the time until the whole burst is available again.
	Reset time.Duration
	// Waited is how long an admitted request waited for its reserved
	// slot (RateParams.Wait); 0 when it was admitted at once.
	Waited time.Duration
}

// interval is one request's share of the rate, Period/Limit.
func (p RateParams) interval() time.Duration { return p.Period / time.Duration(p.Limit) }

// burst is Burst or its default.
func (p RateParams) burst() int {
	if p.Burst == 0 {
		return p.Limit
	}
	return p.Burst
}

// check returns why p is out of bounds, or nil.
func (p RateParams) check() error {
	bad := func(why string) error { return fmt.Errorf("%w: %d per %v: %s", ErrBadRate, p.Limit, p.Period, why) }
	switch {
	case p.Limit < 1:
		return bad("Limit must be at least 1")
	case p.Period < time.Millisecond:
		return bad("Period must be at least 1ms")
	case p.interval() < time.Microsecond:
		return bad("more than one request per microsecond")
	case p.Burst < 0:
		return bad("Burst must not be negative")
	case p.Wait < 0:
		return bad("Wait must not be negative")
	case time.Duration(p.burst()) > (maxRateBucket-p.Wait)/p.interval():
		return bad(fmt.Sprintf("a burst of %d (and Wait) takes more than %v to refill", p.burst(), maxRateBucket))
	}
	return nil
}

// SupportsRate returns nil when Allow can keep p's rate on l, and
// otherwise an error matching ErrBadRate (p out of bounds) or
// ErrKindUnsupported (a Redlock Locker: see Allow). Guards call it when
// they are built, so a service refuses to start instead of failing every
// request.
func (l *Locker) SupportsRate(p RateParams) error {
	if err := p.check(); err != nil {
		return err
	}
	_, err := l.be.Rates()
	return err
}

// Allow decides one request against the rate limit of key: at most
// p.Limit per p.Period in the long run, p.Burst at once (GCRA, one script
// on the server's clock, exact across processes). It returns nil when
// admitted; ErrRateLimited when refused (RetryAfter says when to retry);
// ErrUnavailable, ErrBadRate, ErrEmptyKey, or ErrKindUnsupported on a
// Redlock Locker. With p.Wait a slot coming within the wait is reserved
// and Allow sleeps until it. See docs/locking.md#rate-limits.
func (l *Locker) Allow(ctx context.Context, key string, p RateParams) (RateDecision, error) {
	span := l.tel.startRate(ctx)
	d, err := l.allow(ctx, key, p)
	l.tel.endRate(span, key, p, d, err)
	return d, err
}

func (l *Locker) allow(ctx context.Context, key string, p RateParams) (RateDecision, error) {
	nd, err := l.be.Rates()
	if err != nil {
		return RateDecision{}, err
	}
	if err := p.check(); err != nil {
		return RateDecision{}, err
	}
	if key == "" {
		return RateDecision{}, ErrEmptyKey
	}
	if err := ctx.Err(); err != nil {
		return RateDecision{}, errors.Join(ErrRateLimited, err)
	}
	maxDelay := p.Wait
	if dl, ok := ctx.Deadline(); ok && maxDelay > 0 {
		maxDelay = max(min(maxDelay, time.Until(dl)), 0)
	}
	r, err := rate.Take(ctx, nd, rate.Key(l.o.prefix, key), p.Period, p.Limit, p.burst(), maxDelay)
	if err != nil {
		if ce := ctx.Err(); ce != nil {
			return RateDecision{}, errors.Join(ErrRateLimited, ce)
		}
		return RateDecision{}, lockerr.Unavailable(err)
	}
	wait, reset := r.Wait, r.Reset
	if !r.Admitted {
		return RateDecision{RetryAfter: wait, Reset: reset}, ErrRateLimited
	}
	d := RateDecision{Remaining: r.Remaining, Reset: reset}
	if wait > 0 {
		// The slot is ours: wait for it, not for anyone's signal.
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
			d.Waited = wait
		case <-ctx.Done():
			return RateDecision{Reset: reset}, errors.Join(ErrRateLimited, ctx.Err())
		}
	}
	return d, nil
}

// RateState is what InspectRate found for one rate key at one moment,
// under the terms of its last admission.
type RateState struct {
	// Name is the rate key's name, as given to Allow.
	Name string
	// Burst is the bucket's size: the requests admitted at once when full.
	Burst int
	// Interval is one request's share of the rate: Period/Limit.
	Interval time.Duration
	// Remaining is how many requests would be admitted now.
	Remaining int
	// Reset is the time until the whole burst is available again.
	Reset time.Duration
}

// InspectRate reads the state of key's rate limit, for operators; it
// changes nothing. A key that is not in Redis — never used, or idle long
// enough for its whole burst to be back — returns ok false. It returns an
// error matching ErrUnavailable when Redis failed, or ErrKindUnsupported
// on a Redlock Locker.
func (l *Locker) InspectRate(ctx context.Context, key string) (st RateState, ok bool, err error) {
	nd, err := l.be.Rates()
	if err != nil {
		return RateState{}, false, err
	}
	rs, ok, err := rate.Inspect(ctx, nd, rate.Key(l.o.prefix, key))
	if err != nil {
		return RateState{}, false, lockerr.Unavailable(err)
	}
	if !ok {
		return RateState{}, false, nil
	}
	return RateState{Name: key, Burst: rs.Burst, Interval: rs.Interval, Remaining: rs.Remaining, Reset: rs.Reset}, true, nil
}
