package lockotel

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/locktag/locktag/locker"
)

// Renewal results (attribute locktag.renewal.result).
const (
	renewalOK      = "ok"
	renewalError   = "error"
	renewalRefused = "refused"
)

// spanBase is base's attributes for one set of terms.
type spanBase struct {
	k  baseKey
	kv []attribute.KeyValue
}

// baseKey is what base's attributes depend on besides the lock name.
type baseKey struct {
	template string
	fixed    bool
	limit    int
	mode     locker.Mode
	keys     int
}

// kvScratch holds the attribute lists spans are given: the SDK copies
// them (SetAttributes appends to the span's own list), so a pooled array
// saves an allocation per span. An array is Put back cleared.
var kvScratch = sync.Pool{New: func() any { return new([16]attribute.KeyValue) }}

// base returns the attributes every span of a lock with terms p (and keys
// distinct keys, for ObtainMany) carries, except the key (see setAttrs).
// Read-only: it is shared.
func (t *Observer) base(p locker.Params, keys int) []attribute.KeyValue {
	a := t.attrs(lockName(p))
	k := baseKey{template: p.Template, fixed: p.TTL > 0, limit: p.Limit, mode: p.Mode, keys: keys}
	if b := a.spanBase.Load(); b != nil && b.k == k {
		return b.kv
	}
	mode := "watchdog"
	if k.fixed {
		mode = "fixed"
	}
	kv := []attribute.KeyValue{AttrLockName.String(lockName(p)), AttrMode.String(mode)}
	switch {
	case keys > 0:
		kv = append(kv, AttrKind.String("multi"), AttrKeys.Int(keys))
	case p.Limit > 0:
		kv = append(kv, AttrKind.String("semaphore"), AttrLimit.Int(p.Limit))
	case p.Mode == locker.Read:
		kv = append(kv, AttrKind.String("read"))
	case p.Mode == locker.Write:
		kv = append(kv, AttrKind.String("write"))
	default:
		kv = append(kv, AttrKind.String("mutex"))
	}
	if p.Template != "" {
		kv = append(kv, AttrKeyTemplate.String(p.Template))
	}
	a.spanBase.Store(&spanBase{k: k, kv: kv})
	return kv
}

// setAttrs sets a lock span's attributes in one call (each call grows the
// SDK span's list once): base, the key when the event carries one, extra.
func (t *Observer) setAttrs(span trace.Span, key string, p locker.Params, keys int, extra ...attribute.KeyValue) {
	buf := kvScratch.Get().(*[16]attribute.KeyValue)
	kv := append(buf[:0], t.base(p, keys)...)
	if key != "" {
		kv = append(kv, AttrKey.String(key))
	}
	kv = append(kv, extra...)
	span.SetAttributes(kv...)
	clear(kv)
	kvScratch.Put(buf)
}

// StartObtain opens the span locktag.obtain.
func (t *Observer) StartObtain(ctx context.Context) any {
	_, span := t.start(ctx, "locktag.obtain")
	return span
}

// EndObtain gives the obtain span its attributes, closes it and records
// the outcome and the call's duration.
func (t *Observer) EndObtain(state any, e locker.ObtainEvent) {
	span := spanOf(state)
	a := t.attrs(lockName(e.Params))
	t.acquire.Record(context.Background(), e.Took.Seconds(), a.outcomes[e.Outcome].rec...)
	t.outcomes.Add(context.Background(), 1, a.outcomes[e.Outcome].add...)
	if span.IsRecording() {
		wait, out := AttrWait.Int64(e.Params.Wait.Milliseconds()), AttrOutcome.String(e.Outcome)
		if e.Holds > 0 {
			t.setAttrs(span, e.Key, e.Params, e.Keys, wait, out, AttrFence.Int64(e.Fence), AttrHolds.Int(e.Holds))
		} else {
			t.setAttrs(span, e.Key, e.Params, e.Keys, wait, out)
		}
		if e.Outcome == locker.OutcomeError || e.Outcome == locker.OutcomeProtocol {
			span.RecordError(e.Err)
			span.SetStatus(codes.Error, e.Err.Error())
		}
	}
	span.End()
}

// StartWait counts a waiting Obtain (locktag.lock.waiters).
func (t *Observer) StartWait(p locker.Params) {
	t.waiters.Add(context.Background(), 1, t.attrs(lockName(p)).name.add...)
}

// EndWait ends it and records the wait.
func (t *Observer) EndWait(p locker.Params, waited time.Duration) {
	a := t.attrs(lockName(p))
	t.waiters.Add(context.Background(), -1, a.name.add...)
	t.wait.Record(context.Background(), waited.Seconds(), a.name.rec...)
}

// StartHold opens the span locktag.hold, which lasts while the lock is
// held; the returned context carries it, so the protected work is traced
// under it.
func (t *Observer) StartHold(ctx context.Context, e locker.HoldEvent) (context.Context, any) {
	t.held.Add(context.Background(), 1, t.attrs(lockName(e.Params)).name.add...)
	ctx, span := t.start(ctx, "locktag.hold")
	if span.IsRecording() {
		t.setAttrs(span, e.Key, e.Params, e.Keys, AttrFence.Int64(e.Fence))
	}
	return ctx, span
}

// EndHold closes the hold span and records the hold; a lost lock also
// counts as outcome lost and marks the span.
func (t *Observer) EndHold(state any, e locker.HoldEvent) {
	span := spanOf(state)
	a := t.attrs(lockName(e.Params))
	t.held.Add(context.Background(), -1, a.name.add...)
	t.hold.Record(context.Background(), e.Held.Seconds(), a.name.rec...)
	if isLost(e.Cause) {
		t.outcomes.Add(context.Background(), 1, a.outcomes[locker.OutcomeLost].add...)
		span.AddEvent("locktag.lock_lost")
		span.SetStatus(codes.Error, locker.ErrLockLost.Error())
	}
	span.End()
}

// Renewal counts one watchdog renewal; a failed or refused one is an
// event on the hold span.
func (t *Observer) Renewal(state any, e locker.RenewalEvent) {
	span := spanOf(state)
	result := renewalOK
	switch {
	case e.Err != nil:
		result = renewalError
		span.AddEvent("locktag.renewal_failed", trace.WithAttributes(attribute.String("error", e.Err.Error())))
	case !e.OK:
		result = renewalRefused
		span.AddEvent("locktag.renewal_refused")
	}
	t.renewals.Add(context.Background(), 1, t.attrs(lockName(e.Params)).renewals[result].add...)
}

// StartRelease opens the span locktag.release.
func (t *Observer) StartRelease(ctx context.Context) any {
	_, span := t.start(ctx, "locktag.release")
	return span
}

// EndRelease closes it.
func (t *Observer) EndRelease(state any, e locker.ReleaseEvent) {
	span := spanOf(state)
	if span.IsRecording() {
		t.setAttrs(span, e.Key, e.Params, e.Keys, AttrHolds.Int(e.Holds))
		if e.Err != nil {
			span.RecordError(e.Err)
			if !errors.Is(e.Err, locker.ErrNotHeld) {
				span.SetStatus(codes.Error, e.Err.Error())
			}
		}
	}
	span.End()
}

// StartIdempotency opens the span locktag.idempotency.
func (t *Observer) StartIdempotency(ctx context.Context, name string) any {
	_, span := t.start(ctx, "locktag.idempotency")
	if span.IsRecording() {
		span.SetAttributes(AttrLockName.String(name))
	}
	return span
}

// EndIdempotency closes it and counts the outcome.
func (t *Observer) EndIdempotency(state any, e locker.IdempotencyEvent) {
	span := spanOf(state)
	t.idem.Add(context.Background(), 1, t.attrs(e.Name).idem[e.Outcome].add...)
	if span.IsRecording() {
		span.SetAttributes(AttrOutcome.String(e.Outcome))
		if e.Outcome == locker.OutcomeError || e.Outcome == locker.OutcomeProtocol {
			span.RecordError(e.Err)
			span.SetStatus(codes.Error, e.Err.Error())
		}
	}
	span.End()
}

// StartRate opens the span locktag.rate.
func (t *Observer) StartRate(ctx context.Context) any {
	_, span := t.start(ctx, "locktag.rate")
	return span
}

// EndRate closes it and counts the outcome under the decision's name in
// locktag.lock.outcomes.
func (t *Observer) EndRate(state any, e locker.RateEvent) {
	span := spanOf(state)
	p := e.Params
	name := lockName(locker.Params{Name: p.Name, Template: p.Template})
	t.outcomes.Add(context.Background(), 1, t.attrs(name).outcomes[e.Outcome].add...)
	if span.IsRecording() {
		kv := []attribute.KeyValue{AttrLockName.String(name), AttrKind.String("rate"), AttrOutcome.String(e.Outcome),
			AttrRate.String(strconv.Itoa(p.Limit) + "/" + p.Period.String()), AttrWait.Int64(p.Wait.Milliseconds())}
		if p.Template != "" {
			kv = append(kv, AttrKeyTemplate.String(p.Template))
		}
		if e.Key != "" {
			kv = append(kv, AttrKey.String(e.Key))
		}
		if e.Decision.Waited > 0 {
			kv = append(kv, AttrWaited.Int64(e.Decision.Waited.Milliseconds()))
		}
		span.SetAttributes(kv...)
		if e.Outcome == locker.OutcomeError || e.Outcome == locker.OutcomeProtocol {
			span.RecordError(e.Err)
			span.SetStatus(codes.Error, e.Err.Error())
		}
	}
	span.End()
}

// StartForceRelease opens the span locktag.force_release.
func (t *Observer) StartForceRelease(ctx context.Context, e locker.ForceEvent) (context.Context, any) {
	ctx, span := t.start(ctx, "locktag.force_release")
	if span.IsRecording() {
		span.SetAttributes(AttrReason.String(e.Reason), AttrActor.String(e.Actor))
		if e.Name != "" {
			span.SetAttributes(AttrKey.String(e.Name))
		}
	}
	return ctx, span
}

// EndForceRelease records the audit event locktag.force_released on the
// force-release span, or on ctx's span when that one is not recorded,
// and closes it.
func (t *Observer) EndForceRelease(ctx context.Context, state any, e locker.ForceEvent) {
	span := spanOf(state)
	ev := span
	if !ev.IsRecording() {
		ev = trace.SpanFromContext(ctx)
	}
	if ev.IsRecording() {
		ev.AddEvent("locktag.force_released", trace.WithAttributes(
			AttrReason.String(e.Reason), AttrActor.String(e.Actor), AttrOwners.StringSlice(e.Owners)))
	}
	if e.Err != nil {
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End()
}
