package locker

import (
	"context"
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// startRate opens the span of one rate-limit decision.
func (t *telemetry) startRate(ctx context.Context) trace.Span {
	_, span := t.start(ctx, "locktag.rate")
	return span
}

// endRate closes it and counts the outcome under the decision's name in
// locktag.lock.outcomes.
func (t *telemetry) endRate(span trace.Span, key string, p RateParams, d RateDecision, err error) {
	var outcome string
	switch {
	case err == nil:
		outcome = OutcomeAdmitted
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		outcome = OutcomeCanceled
	case errors.Is(err, ErrRateLimited):
		outcome = OutcomeRateLimited
	default:
		outcome = OutcomeError
	}
	name := lockName(Params{Name: p.Name, Template: p.Template})
	t.outcomes.Add(context.Background(), 1, t.attrs(name).outcomes[outcome].add...)
	if span.IsRecording() {
		kv := []attribute.KeyValue{AttrLockName.String(name), AttrKind.String("rate"), AttrOutcome.String(outcome),
			AttrRate.String(strconv.Itoa(p.Limit) + "/" + p.Period.String()), AttrWait.Int64(p.Wait.Milliseconds())}
		if p.Template != "" {
			kv = append(kv, AttrKeyTemplate.String(p.Template))
		}
		if t.keys {
			kv = append(kv, AttrKey.String(key))
		}
		if d.Waited > 0 {
			kv = append(kv, AttrWaited.Int64(d.Waited.Milliseconds()))
		}
		span.SetAttributes(kv...)
		if outcome == OutcomeError {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}
