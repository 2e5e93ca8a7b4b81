package locker

import (
	"context"
	"time"

	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/rate"
)

// Rate-limit sentinel errors.
var (
	// ErrRateLimited: Allow refused the request: the key's rate is used up
	// and no slot comes within RateParams.Wait (joined with ctx.Err()
	// when the caller's context ended first, also while it waited for its
	// slot). RateDecision.RetryAfter says when the next request would be
	// admitted.
	ErrRateLimited = lockerr.ErrRateLimited
	// ErrBadRate: Allow or SupportsRate was given RateParams out of
	// bounds; the message says which.
	ErrBadRate = lockerr.ErrBadRate
)

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

// check returns why p is out of bounds, or nil.
func (p RateParams) check() error { return rate.Check(p.Limit, p.Period, p.Burst, p.Wait) }

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
	if err != nil {
		l.protocolMet(ctx, err)
	}
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
	r, err := rate.Allow(ctx, nd, rate.Key(l.o.prefix, key), p.Period, p.Limit, p.Burst, p.Wait)
	return RateDecision(r), err
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
