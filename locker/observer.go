package locker

import (
	"context"
	"time"
)

// Observer receives a Locker's events, for instrumentation (package
// lockotel turns them into OpenTelemetry spans and metrics); without one
// (WithObserver) a Locker reports nothing and pays nothing. Each StartX
// returns a value the Locker hands, untouched, to the matching EndX,
// called exactly once (StartHold's also to every Renewal of the hold).
// Methods may be called concurrently and must not block: they run on the
// lock's path. Events carry the resolved key only with
// WithKeyAttribute(true). See docs/observability.md.
type Observer interface {
	// StartObtain and EndObtain bracket an Obtain or ObtainMany call.
	StartObtain(ctx context.Context) any
	EndObtain(state any, e ObtainEvent)
	// StartWait and EndWait bracket the wait of an Obtain that found the
	// lock busy.
	StartWait(p Params)
	EndWait(p Params, waited time.Duration)
	// StartHold is called when a lock is obtained (not re-entered); the
	// context it returns is the one the lease's Context derives from, so
	// the protected work runs under it. EndHold is called when the hold
	// ends: e.Cause is ErrNotHeld after the last Release, or matches
	// ErrLockLost when the lock was lost.
	StartHold(ctx context.Context, e HoldEvent) (context.Context, any)
	EndHold(state any, e HoldEvent)
	// Renewal reports one watchdog renewal of a hold.
	Renewal(state any, e RenewalEvent)
	// StartRelease and EndRelease bracket a Release or ReleaseAfter call.
	StartRelease(ctx context.Context) any
	EndRelease(state any, e ReleaseEvent)
	// StartIdempotency and EndIdempotency bracket an Idempotent call;
	// name is IdempotencyParams.Name, or "idempotency" when that is "".
	StartIdempotency(ctx context.Context, name string) any
	EndIdempotency(state any, e IdempotencyEvent)
	// StartRate and EndRate bracket an Allow call.
	StartRate(ctx context.Context) any
	EndRate(state any, e RateEvent)
	// StartForceRelease and EndForceRelease bracket a ForceRelease (the
	// audit); its Redis calls run with the context StartForceRelease returns.
	StartForceRelease(ctx context.Context, e ForceEvent) (context.Context, any)
	EndForceRelease(ctx context.Context, state any, e ForceEvent)
}

// TraceIDSource is an Observer that knows a context's trace (lockotel's):
// lock guards then add the trace id to the holder's label.
type TraceIDSource interface {
	// TraceID returns the id of the trace ctx belongs to, or "".
	TraceID(ctx context.Context) string
}

// ObtainEvent is a finished Obtain or ObtainMany call.
type ObtainEvent struct {
	Params  Params
	Key     string        // the lock name (ObtainMany: the keys joined with ","); "" unless WithKeyAttribute(true)
	Keys    int           // an ObtainMany's distinct keys; 0 for Obtain
	Outcome string        // OutcomeAcquired, OutcomeReentered, OutcomeBusy, OutcomeCanceled or OutcomeError
	Took    time.Duration // the whole call, waiting included
	Fence   int64         // the lease's fencing token; 0 without a lease
	Holds   int           // the hold count reached; 0 without a lease
	Err     error         // the call's error
}

// HoldEvent is a held lock, at its start and (with Held and Cause) its end.
type HoldEvent struct {
	Params Params
	Key    string // "" unless WithKeyAttribute(true)
	Keys   int    // the distinct keys of the ObtainMany it is part of; 0 for Obtain
	Fence  int64
	Held   time.Duration // EndHold: how long it was held
	Cause  error         // EndHold: ErrNotHeld when released, matches ErrLockLost when lost
}

// RenewalEvent is one watchdog renewal: renewed (OK), refused (the lock
// is no longer this holder's) or failed (Err).
type RenewalEvent struct {
	Params Params
	OK     bool
	Err    error
}

// ReleaseEvent is a finished Release or ReleaseAfter call.
type ReleaseEvent struct {
	Params Params
	Key    string // "" unless WithKeyAttribute(true)
	Keys   int    // an ObtainMany's distinct keys; 0 for Obtain
	Holds  int    // the hold count the lease had brought the lock to
	Err    error
}

// IdempotencyEvent is a finished Idempotent call.
type IdempotencyEvent struct {
	Name    string // IdempotencyParams.Name, or "idempotency"
	Outcome string // IdempotencyExecuted, IdempotencyReplayed, IdempotencyConflict, IdempotencyMismatch, OutcomeCanceled or OutcomeError
	Err     error
}

// RateEvent is a finished Allow call.
type RateEvent struct {
	Params   RateParams
	Key      string // "" unless WithKeyAttribute(true)
	Decision RateDecision
	Outcome  string // OutcomeAdmitted, OutcomeRateLimited, OutcomeCanceled or OutcomeError
	Err      error
}

// ForceEvent is a ForceRelease: at its start Name, Reason and Actor, at
// its end also the owner tokens it freed and its error.
type ForceEvent struct {
	Name   string // "" unless WithKeyAttribute(true)
	Reason string // as recorded: "no reason given" for none, cut to 200 bytes
	Actor  string // WithActor on the call's ctx, or ""
	Owners []string
	Err    error
}

// TraceID returns the id of the trace ctx belongs to, as the Locker's
// Observer reads it (TraceIDSource), or "" without one. Lock guards put
// it in the holder's label.
func (l *Locker) TraceID(ctx context.Context) string {
	if l.tel.ids == nil {
		return ""
	}
	return l.tel.ids.TraceID(ctx)
}
