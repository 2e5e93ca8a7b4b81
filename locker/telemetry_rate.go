package locker

import (
	"context"

	"github.com/locktag/locktag/locker/internal/admin"
	"github.com/locktag/locktag/locker/internal/outcome"
)

// startRate reports an Allow call's start.
func (t *telemetry) startRate(ctx context.Context) any {
	if t.obs == nil {
		return nil
	}
	return t.obs.StartRate(ctx)
}

// endRate reports its end with the decision's outcome.
func (t *telemetry) endRate(state any, key string, p RateParams, d RateDecision, err error) {
	if t.obs == nil {
		return
	}
	t.obs.EndRate(state, RateEvent{Params: p, Key: t.key(key), Decision: d, Outcome: outcome.Rate(err), Err: err})
}

// startForce reports a ForceRelease's start; the context is the one its
// Redis calls run with.
func (t *telemetry) startForce(ctx context.Context, name, reason, actor string) (context.Context, any) {
	if t.obs == nil {
		return ctx, nil
	}
	return t.obs.StartForceRelease(ctx, ForceEvent{Name: t.key(name), Reason: reason, Actor: actor})
}

// endForce reports its end: the owners it freed and its error.
func (t *telemetry) endForce(ctx context.Context, state any, name, reason, actor string, all []admin.Freed, err error) {
	if t.obs == nil {
		return
	}
	owners := make([]string, len(all))
	for i, f := range all {
		owners[i] = f.Owner
	}
	t.obs.EndForceRelease(ctx, state, ForceEvent{Name: t.key(name), Reason: reason, Actor: actor, Owners: owners, Err: err})
}
