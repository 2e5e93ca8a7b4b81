package guard

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
)

// Quota is a rate tag's limit and its state after one decision: what the
// adapters send as the RateLimit-Policy and RateLimit fields (HTTP) and
// a google.rpc.QuotaFailure (RPC).
type Quota struct {
	// Policy names the limit for clients: the tag's name, or "default".
	Policy string
	// Limit requests per Period in the long run (the tag's rate), Burst
	// at once.
	Limit  int
	Period time.Duration
	Burst  int
	// Remaining is how many more requests would be admitted now: 0 for
	// a refusal and for a request that waited for its slot.
	Remaining int
	// Reset is the time until the whole burst is available again.
	Reset time.Duration
}

// DefaultPolicy is the policy name of a rate tag without a name.
const DefaultPolicy = "default"

// rateGuard is a rate tag's part of a Lock: its terms, ready for Allow.
type rateGuard struct {
	params locker.RateParams
	policy string
	// warned: a rate guard found running inside a held lock has said so.
	warned atomic.Bool
}

// newRateGuard checks a rate tag's terms against l.
func newRateGuard(l *locker.Locker, spec *keyexpr.Spec) (*rateGuard, error) {
	rg := &rateGuard{
		params: locker.RateParams{
			Limit: spec.Rate.N, Period: spec.Rate.Period, Burst: spec.Rate.Burst, Wait: spec.Wait,
			Name: spec.Name, Template: spec.Key.String(),
		},
		policy: spec.Name,
	}
	if rg.policy == "" {
		rg.policy = DefaultPolicy
	}
	if err := l.SupportsRate(rg.params); err != nil {
		return nil, fmt.Errorf("guard: tag `%s`: %w", spec.Tag, err)
	}
	return rg, nil
}

// quota is the Quota after decision d.
func (rg *rateGuard) quota(d locker.RateDecision) *Quota {
	p := rg.params
	return &Quota{Policy: rg.policy, Limit: p.Limit, Period: p.Period, Burst: p.Burst, Remaining: d.Remaining, Reset: d.Reset}
}

// runRate is Run for a rate tag: it resolves the key, decides the request
// against the rate (waiting for a reserved slot up to the tag's wait) and
// runs call when it is admitted. There is nothing to release.
func (g *Lock[R]) runRate(ctx context.Context, r R, name string, call func(ctx context.Context) error) Outcome {
	rg := g.rate
	p := rg.params
	if p.Name == "" {
		p.Name = name
	}
	o := Outcome{Kind: OK, Name: p.Name, Tag: g.spec.Tag}
	key, err := g.key.Eval(r)
	if err != nil {
		return g.refuse(ctx, o, classify(err), err, name)
	}
	if locker.FromContext(ctx) != nil {
		g.warnInsideLock(ctx, p.Name)
	}
	d, err := g.l.Allow(ctx, key, p)
	if err != nil {
		kind := classify(err)
		if kind == Unavailable && g.s.failOpen && !errors.Is(err, locker.ErrProtocol) && !errors.Is(err, locker.ErrClosed) {
			o.Kind, o.Err = FailedOpen, err
			_ = call(context.WithValue(ctx, failedOpenKey{}, err))
			return o
		}
		if kind == RateLimited {
			o.RetryAfter, o.Quota = d.RetryAfter, rg.quota(d)
		}
		return g.refuse(ctx, o, kind, err, name)
	}
	o.Quota = rg.quota(d)
	_ = call(context.WithValue(ctx, quotaKey{}, o.Quota)) // no lock: nothing can be lost
	return o
}

// warnInsideLock logs, once per guard, that the rate is checked while the
// request holds a lock: the rate guard was put after a lock guard, so a
// refused request has queued for the lock first.
func (g *Lock[R]) warnInsideLock(ctx context.Context, name string) {
	if !g.rate.warned.CompareAndSwap(false, true) {
		return
	}
	g.s.logger.WarnContext(ctx, "locktag: a rate tag runs inside a held lock; put the rate tag before the lock tag, "+
		"so a refused request never queues for the lock", "tag", g.spec.Tag, "name", name)
}

// quotaKey is the context key of the Quota a rate guard's call runs with.
type quotaKey struct{}

// QuotaFromContext returns the Quota of the rate guard whose call ctx is
// (the request was admitted), or nil. HTTP adapters send it with the
// answer as the RateLimit fields.
func QuotaFromContext(ctx context.Context) *Quota {
	q, _ := ctx.Value(quotaKey{}).(*Quota)
	return q
}
