package locker

import (
	"context"
	"errors"
	"time"

	"github.com/locktag/locktag/locker/internal/admin"
	"github.com/locktag/locktag/locker/internal/logs"
)

// Outcomes of an idempotency check (IdempotencyEvent.Outcome; lockotel's
// attribute locktag.outcome); canceled and error as for locks.
const (
	IdempotencyExecuted = "executed" // the key was claimed: the request runs
	IdempotencyReplayed = "replayed" // a stored outcome is replayed
	IdempotencyConflict = "conflict" // ErrInFlight: the same key is still running
	IdempotencyMismatch = "mismatch" // ErrMismatch: the key was used for another request
)

// Outcomes of an Obtain (ObtainEvent.Outcome), and "lost" for a held lock
// that was lost.
const (
	OutcomeAcquired  = "acquired"
	OutcomeReentered = "reentered"
	OutcomeBusy      = "busy"     // ErrNotObtained after the wait
	OutcomeCanceled  = "canceled" // the caller's context ended first
	OutcomeError     = "error"    // Redis unavailable, quorum not reached
	OutcomeLost      = "lost"
	// OutcomeProtocol: a record of another protocol refused the call
	// (ErrProtocol); also an Allow's and an Idempotent call's outcome.
	OutcomeProtocol = "protocol"
)

// Outcomes of an Allow (a rate-limit decision); canceled and error as
// for Obtain.
const (
	OutcomeAdmitted    = "admitted"     // the request is within the rate
	OutcomeRateLimited = "rate_limited" // ErrRateLimited: refused, no slot within the wait
)

// telemetry hands a Locker's events to its Observer (WithObserver). With
// none, every method returns at its first line: no allocation, no clock
// read.
type telemetry struct {
	obs  Observer        // nil: none
	ids  TraceIDSource   // obs, when it is one
	mis  MistakeObserver // obs, when it is one
	keys bool            // WithKeyAttribute: events carry the key
}

func newTelemetry(o *options) *telemetry {
	t := &telemetry{obs: o.observer, keys: o.keyAttribute}
	t.ids, _ = o.observer.(TraceIDSource)
	t.mis, _ = o.observer.(MistakeObserver)
	return t
}

// key is the key an event carries: "" unless WithKeyAttribute(true).
func (t *telemetry) key(key string) string {
	if t.keys {
		return key
	}
	return ""
}

// startObtain reports an Obtain's start; endObtain its end.
func (t *telemetry) startObtain(ctx context.Context) any {
	if t.obs == nil {
		return nil
	}
	return t.obs.StartObtain(ctx)
}

func (t *telemetry) endObtain(state any, start time.Time, key string, p Params, le *Lease, err error) {
	if t.obs == nil {
		return
	}
	e := ObtainEvent{Params: p, Key: t.key(key), Keys: p.keys, Outcome: obtainOutcome(le.Holds(), err), Took: time.Since(start), Err: err}
	if le != nil {
		e.Fence, e.Holds = le.fence, le.holds
	}
	t.obs.EndObtain(state, e)
}

// noop is waiting's end without an Observer.
func noop() {}

// waiting reports a waiting Obtain and returns the function that ends it.
func (t *telemetry) waiting(p Params) func() {
	if t.obs == nil {
		return noop
	}
	t.obs.StartWait(p)
	start := time.Now()
	return func() { t.obs.EndWait(p, time.Since(start)) }
}

// startHold reports a hold's start; the returned context (the Observer's:
// with lockotel, carrying the hold span) is the lease's base context, so
// the protected work is traced under it.
func (t *telemetry) startHold(ctx context.Context, key string, p Params, fence int64) (context.Context, any) {
	if t.obs == nil {
		return ctx, nil
	}
	return t.obs.StartHold(ctx, HoldEvent{Params: p, Key: t.key(key), Keys: p.keys, Fence: fence})
}

// endHold reports a hold's end; cause matches ErrLockLost for a loss.
func (t *telemetry) endHold(state any, root *Lease, cause error) {
	if t.obs == nil {
		return
	}
	p := root.t.params
	t.obs.EndHold(state, HoldEvent{Params: p, Key: t.key(root.key), Keys: p.keys, Fence: root.fence,
		Held: time.Since(root.since), Cause: cause})
}

// renewed reports one watchdog renewal.
func (t *telemetry) renewed(state any, p Params, ok bool, err error) {
	if t.obs == nil {
		return
	}
	t.obs.Renewal(state, RenewalEvent{Params: p, OK: ok, Err: err})
}

// startRelease reports a Release call's start; endRelease its end.
func (t *telemetry) startRelease(ctx context.Context) any {
	if t.obs == nil {
		return nil
	}
	return t.obs.StartRelease(ctx)
}

func (t *telemetry) endRelease(state any, le *Lease, err error) {
	if t.obs == nil {
		return
	}
	p := le.root.t.params
	t.obs.EndRelease(state, ReleaseEvent{Params: p, Key: t.key(le.key), Keys: p.keys, Holds: le.holds, Err: err})
}

// startIdem reports an Idempotent call's start; endIdem its end.
func (t *telemetry) startIdem(ctx context.Context, name string) any {
	if t.obs == nil {
		return nil
	}
	return t.obs.StartIdempotency(ctx, logs.ClaimName(name))
}

func (t *telemetry) endIdem(state any, name string, c *Claim, err error) {
	if t.obs == nil {
		return
	}
	t.obs.EndIdempotency(state, IdempotencyEvent{Name: logs.ClaimName(name), Outcome: idempotencyOutcome(c != nil && c.replay, err), Err: err})
}

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
	t.obs.EndRate(state, RateEvent{Params: p, Key: t.key(key), Decision: d, Outcome: rateOutcome(err), Err: err})
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

// canceled reports an error of a call whose context ended first.
func canceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// obtainOutcome is an Obtain's outcome: holds is the hold count reached.
// A cancelled wait is canceled though it also matches ErrNotObtained.
func obtainOutcome(holds int, err error) string {
	switch {
	case err == nil && holds > 1:
		return OutcomeReentered
	case err == nil:
		return OutcomeAcquired
	case canceled(err):
		return OutcomeCanceled
	case errors.Is(err, ErrNotObtained):
		return OutcomeBusy
	case errors.Is(err, ErrProtocol):
		return OutcomeProtocol
	}
	return OutcomeError
}

// idempotencyOutcome is an Idempotent call's outcome: replay for a Claim
// that replays a stored outcome.
func idempotencyOutcome(replay bool, err error) string {
	switch {
	case err == nil && replay:
		return IdempotencyReplayed
	case err == nil:
		return IdempotencyExecuted
	case errors.Is(err, ErrMismatch):
		return IdempotencyMismatch
	case canceled(err):
		return OutcomeCanceled
	case errors.Is(err, ErrInFlight):
		return IdempotencyConflict
	case errors.Is(err, ErrProtocol):
		return OutcomeProtocol
	}
	return OutcomeError
}

// rateOutcome is an Allow's outcome.
func rateOutcome(err error) string {
	switch {
	case err == nil:
		return OutcomeAdmitted
	case canceled(err):
		return OutcomeCanceled
	case errors.Is(err, ErrRateLimited):
		return OutcomeRateLimited
	case errors.Is(err, ErrProtocol):
		return OutcomeProtocol
	}
	return OutcomeError
}
