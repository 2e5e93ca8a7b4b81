package locker

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every span and metric locktag
// records.
const ScopeName = "github.com/locktag/locktag"

// Attribute keys, in locktag's own namespace.
const (
	AttrLockName    = attribute.Key("locktag.lock.name")      // low-cardinality name: Params.Name, the route or full method
	AttrKeyTemplate = attribute.Key("locktag.key.template")   // the tag's key template, e.g. "order:{path.id}"
	AttrKey         = attribute.Key("locktag.key")            // the resolved lock name; only with WithKeyAttribute
	AttrOutcome     = attribute.Key("locktag.outcome")        // see the Outcome constants
	AttrMode        = attribute.Key("locktag.lock.mode")      // "watchdog" or "fixed"
	AttrWait        = attribute.Key("locktag.lock.wait_ms")   // the wait asked for
	AttrWaited      = attribute.Key("locktag.lock.waited_ms") // the time spent waiting
	AttrFence       = attribute.Key("locktag.lock.fence")     // fencing token
	AttrHolds       = attribute.Key("locktag.lock.holds")     // hold count reached
	AttrRenewal     = attribute.Key("locktag.renewal.result") // "ok", "error" or "refused"
	AttrKind        = attribute.Key("locktag.lock.kind")      // "mutex", "semaphore", "read", "write", "multi" or "rate"
	AttrLimit       = attribute.Key("locktag.lock.limit")     // a semaphore's permits (Params.Limit)
	AttrKeys        = attribute.Key("locktag.lock.keys")      // a multi-key lock's distinct keys (ObtainMany)
	AttrRate        = attribute.Key("locktag.rate")           // a rate limit's terms, "100/1m0s" (RateParams)
)

// Outcomes of an idempotency check (attribute locktag.outcome on
// locktag.idempotency spans and the locktag.idempotency.outcomes metric);
// canceled and error as for locks.
const (
	IdemExecuted = "executed" // the key was claimed: the request runs
	IdemReplayed = "replayed" // a stored outcome is replayed
	IdemConflict = "conflict" // ErrInFlight: the same key is still running
	IdemMismatch = "mismatch" // ErrMismatch: the key was used for another request
)

// Outcomes of an Obtain (attribute locktag.outcome), and "lost" for a held
// lock that was lost.
const (
	OutcomeAcquired  = "acquired"
	OutcomeReentered = "reentered"
	OutcomeBusy      = "busy"     // ErrNotObtained after the wait
	OutcomeCanceled  = "canceled" // the caller's context ended first
	OutcomeError     = "error"    // Redis unavailable, quorum not reached
	OutcomeLost      = "lost"
)

// Outcomes of an Allow (a rate-limit decision); canceled and error as
// for Obtain.
const (
	OutcomeAdmitted    = "admitted"     // the request is within the rate
	OutcomeRateLimited = "rate_limited" // ErrRateLimited: refused, no slot within the wait
)

// telemetry holds a Locker's instruments. With the default (no-op) global
// providers every call is a few no-op method calls and no allocation.
type telemetry struct {
	tracer trace.Tracer
	// unset is OpenTelemetry's global stand-in provider, which delegates
	// to the provider otel.SetTracerProvider sets, when no
	// WithTracerProvider was given and none was set yet; nil otherwise.
	// While otel.GetTracerProvider still returns it, no span can be
	// recorded, and start skips the tracer: the stand-in's no-op spans
	// cost 2 allocations each, 6 per lock+unlock. Once a provider is set
	// the check fails and spans go to it.
	unset     trace.TracerProvider
	keys      bool
	acquire   metric.Float64Histogram
	wait      metric.Float64Histogram
	hold      metric.Float64Histogram
	outcomes  metric.Int64Counter
	renewals  metric.Int64Counter
	waiters   metric.Int64UpDownCounter
	held      metric.Int64UpDownCounter
	idem      metric.Int64Counter
	attrCache sync.Map // name -> *nameAttrs
}

// nameAttrs are a lock name's attribute sets, built once.
type nameAttrs struct {
	name     attrOpts
	outcomes map[string]attrOpts
	renewals map[string]attrOpts
	idem     map[string]attrOpts
	// spanBase is the span attributes of the terms last seen with this
	// name (see base): a route's calls all pass the same.
	spanBase atomic.Pointer[spanBase]
}

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
	mode     Mode
	keys     int
}

// kvScratch holds the attribute lists spans are given: the SDK copies
// them (SetAttributes appends to the span's own list), so a pooled array
// saves an allocation per span. An array is Put back cleared.
var kvScratch = sync.Pool{New: func() any { return new([16]attribute.KeyValue) }}

// attrOpts is one attribute set as ready-made option slices: passing a
// prebuilt slice to the variadic Record and Add allocates nothing, where a
// single option would be boxed into a new slice on every call.
type attrOpts struct {
	rec []metric.RecordOption
	add []metric.AddOption
}

func newAttrOpts(kv ...attribute.KeyValue) attrOpts {
	o := metric.WithAttributeSet(attribute.NewSet(kv...))
	return attrOpts{rec: []metric.RecordOption{o}, add: []metric.AddOption{o}}
}

func newTelemetry(o *options) *telemetry {
	tp, mp := o.tracerProvider, o.meterProvider
	var unset trace.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
		if isGlobalStandIn(tp) {
			unset = tp
		}
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(ScopeName, metric.WithInstrumentationVersion(moduleVersion))
	t := &telemetry{tracer: tp.Tracer(ScopeName, trace.WithInstrumentationVersion(moduleVersion)), unset: unset, keys: o.keyAttribute}
	buckets := metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
	// Instrument creation errors leave no-op instruments; nothing to do.
	t.acquire, _ = m.Float64Histogram("locktag.lock.acquire.duration", metric.WithUnit("s"),
		metric.WithDescription("Time an Obtain call took, waiting included, by outcome."), buckets)
	t.wait, _ = m.Float64Histogram("locktag.lock.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("Time Obtain calls spent waiting for a busy lock."), buckets)
	t.hold, _ = m.Float64Histogram("locktag.lock.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("Time locks were held, from obtained to released or lost."), buckets)
	t.outcomes, _ = m.Int64Counter("locktag.lock.outcomes", metric.WithUnit("{outcome}"),
		metric.WithDescription("Obtain outcomes (acquired, reentered, busy, canceled, error), locks lost, and rate-limit decisions (admitted, rate_limited)."))
	t.renewals, _ = m.Int64Counter("locktag.lock.renewals", metric.WithUnit("{renewal}"),
		metric.WithDescription("Watchdog renewals by result (ok, error, refused)."))
	t.idem, _ = m.Int64Counter("locktag.idempotency.outcomes", metric.WithUnit("{request}"),
		metric.WithDescription("Idempotency guard outcomes (executed, replayed, conflict, mismatch, canceled, error)."))
	t.waiters, _ = m.Int64UpDownCounter("locktag.lock.waiters", metric.WithUnit("{waiter}"),
		metric.WithDescription("Obtain calls waiting for a busy lock now."))
	t.held, _ = m.Int64UpDownCounter("locktag.lock.held", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks held now (obtained, neither released nor lost), by lock name."))
	return t
}

// isGlobalStandIn reports whether tp is the stand-in otel.GetTracerProvider
// returns until a provider is set (an unexported type; checked once per
// Locker).
func isGlobalStandIn(tp trace.TracerProvider) bool {
	t := reflect.TypeOf(tp)
	return t.Kind() == reflect.Pointer && t.Elem().PkgPath() == "go.opentelemetry.io/otel/internal/global" && t.Elem().Name() == "tracerProvider"
}

// noSpan is the span of a call that is not traced: every method a no-op.
var noSpan = trace.SpanFromContext(context.Background())

// start opens span name under ctx, or returns ctx and noSpan when no tracer
// provider can record it (see unset).
func (t *telemetry) start(ctx context.Context, name string) (context.Context, trace.Span) {
	if t.unset != nil {
		if otel.GetTracerProvider() == t.unset {
			return ctx, noSpan
		}
	}
	return t.tracer.Start(ctx, name)
}

func (t *telemetry) attrs(name string) *nameAttrs {
	if a, ok := t.attrCache.Load(name); ok {
		return a.(*nameAttrs)
	}
	a := &nameAttrs{
		name:     newAttrOpts(AttrLockName.String(name)),
		outcomes: make(map[string]attrOpts),
		renewals: make(map[string]attrOpts),
		idem:     make(map[string]attrOpts),
	}
	for _, o := range []string{IdemExecuted, IdemReplayed, IdemConflict, IdemMismatch, OutcomeCanceled, OutcomeError} {
		a.idem[o] = newAttrOpts(AttrLockName.String(name), AttrOutcome.String(o))
	}
	for _, o := range []string{OutcomeAcquired, OutcomeReentered, OutcomeBusy, OutcomeCanceled, OutcomeError, OutcomeLost, OutcomeAdmitted, OutcomeRateLimited} {
		a.outcomes[o] = newAttrOpts(AttrLockName.String(name), AttrOutcome.String(o))
	}
	for _, r := range []string{"ok", "error", "refused"} {
		a.renewals[r] = newAttrOpts(AttrLockName.String(name), AttrRenewal.String(r))
	}
	v, _ := t.attrCache.LoadOrStore(name, a)
	return v.(*nameAttrs)
}

// lockName is the name spans and metrics use for a lock.
func lockName(p Params) string {
	if p.Name != "" {
		return p.Name
	}
	if p.Template != "" {
		return p.Template
	}
	return "locker"
}

// startObtain opens the obtain span; endObtain gives it its attributes.
func (t *telemetry) startObtain(ctx context.Context) trace.Span {
	_, span := t.start(ctx, "locktag.obtain")
	return span
}

// base returns the attributes every span of a lock with terms p carries,
// except the key (see setAttrs). Read-only: it is shared.
func (t *telemetry) base(p Params) []attribute.KeyValue {
	a := t.attrs(lockName(p))
	k := baseKey{template: p.Template, fixed: p.TTL > 0, limit: p.Limit, mode: p.Mode, keys: p.keys}
	if b := a.spanBase.Load(); b != nil && b.k == k {
		return b.kv
	}
	mode := "watchdog"
	if k.fixed {
		mode = "fixed"
	}
	kv := []attribute.KeyValue{AttrLockName.String(lockName(p)), AttrMode.String(mode)}
	switch {
	case p.keys > 0:
		kv = append(kv, AttrKind.String("multi"), AttrKeys.Int(p.keys))
	case p.Limit > 0:
		kv = append(kv, AttrKind.String("semaphore"), AttrLimit.Int(p.Limit))
	case p.Mode == Read:
		kv = append(kv, AttrKind.String("read"))
	case p.Mode == Write:
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
// SDK span's list once): base, the key when WithKeyAttribute asks, extra.
func (t *telemetry) setAttrs(span trace.Span, key string, p Params, extra ...attribute.KeyValue) {
	buf := kvScratch.Get().(*[16]attribute.KeyValue)
	kv := append(buf[:0], t.base(p)...)
	if t.keys {
		kv = append(kv, AttrKey.String(key))
	}
	kv = append(kv, extra...)
	span.SetAttributes(kv...)
	clear(kv)
	kvScratch.Put(buf)
}

// endObtain gives the obtain span its attributes, closes it and records
// the outcome.
func (t *telemetry) endObtain(span trace.Span, start time.Time, key string, p Params, le *Lease, err error) {
	outcome := obtainOutcome(le, err)
	a := t.attrs(lockName(p))
	t.acquire.Record(context.Background(), time.Since(start).Seconds(), a.outcomes[outcome].rec...)
	t.outcomes.Add(context.Background(), 1, a.outcomes[outcome].add...)
	if span.IsRecording() {
		wait, out := AttrWait.Int64(p.Wait.Milliseconds()), AttrOutcome.String(outcome)
		if le != nil {
			t.setAttrs(span, key, p, wait, out, AttrFence.Int64(le.fence), AttrHolds.Int(le.holds))
		} else {
			t.setAttrs(span, key, p, wait, out)
		}
		if outcome == OutcomeError {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}

func obtainOutcome(le *Lease, err error) string {
	switch {
	case err == nil && le.holds > 1:
		return OutcomeReentered
	case err == nil:
		return OutcomeAcquired
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return OutcomeCanceled
	case errors.Is(err, ErrNotObtained):
		return OutcomeBusy
	}
	return OutcomeError
}

// waiting counts a waiting Obtain and returns the function that ends it.
func (t *telemetry) waiting(p Params) func() {
	a := t.attrs(lockName(p))
	t.waiters.Add(context.Background(), 1, a.name.add...)
	start := time.Now()
	return func() {
		t.waiters.Add(context.Background(), -1, a.name.add...)
		t.wait.Record(context.Background(), time.Since(start).Seconds(), a.name.rec...)
	}
}

// startHold opens the span that lasts while the lock is held; the lease's
// context carries it, so the protected work is traced under it.
func (t *telemetry) startHold(ctx context.Context, key string, p Params, fence int64) (context.Context, trace.Span) {
	t.held.Add(context.Background(), 1, t.attrs(lockName(p)).name.add...)
	ctx, span := t.start(ctx, "locktag.hold")
	if span.IsRecording() {
		t.setAttrs(span, key, p, AttrFence.Int64(fence))
	}
	return ctx, span
}

// endHold closes the hold span; lost records the loss.
func (t *telemetry) endHold(span trace.Span, start time.Time, p Params, cause error) {
	a := t.attrs(lockName(p))
	t.held.Add(context.Background(), -1, a.name.add...)
	t.hold.Record(context.Background(), time.Since(start).Seconds(), a.name.rec...)
	if errors.Is(cause, ErrLockLost) {
		t.outcomes.Add(context.Background(), 1, a.outcomes[OutcomeLost].add...)
		span.AddEvent("locktag.lock_lost")
		span.SetStatus(codes.Error, ErrLockLost.Error())
	}
	span.End()
}

// renewed records one watchdog renewal.
func (t *telemetry) renewed(span trace.Span, p Params, ok bool, err error) {
	result := "ok"
	switch {
	case err != nil:
		result = "error"
		span.AddEvent("locktag.renewal_failed", trace.WithAttributes(attribute.String("error", err.Error())))
	case !ok:
		result = "refused"
		span.AddEvent("locktag.renewal_refused")
	}
	t.renewals.Add(context.Background(), 1, t.attrs(lockName(p)).renewals[result].add...)
}

// startRelease opens the span of one Release call.
func (t *telemetry) startRelease(ctx context.Context) trace.Span {
	_, span := t.start(ctx, "locktag.release")
	return span
}

// endRelease closes it.
func (t *telemetry) endRelease(span trace.Span, le *Lease, err error) {
	if span.IsRecording() {
		t.setAttrs(span, le.key, le.root.t.params, AttrHolds.Int(le.holds))
		if err != nil {
			span.RecordError(err)
			if !errors.Is(err, ErrNotHeld) {
				span.SetStatus(codes.Error, err.Error())
			}
		}
	}
	span.End()
}

// startIdem opens the span of one idempotency check.
func (t *telemetry) startIdem(ctx context.Context, name string) trace.Span {
	_, span := t.start(ctx, "locktag.idempotency")
	if span.IsRecording() {
		span.SetAttributes(AttrLockName.String(idemName(name)))
	}
	return span
}

func idemName(name string) string {
	if name == "" {
		return "idempotency"
	}
	return name
}

// endIdem closes it and counts the outcome.
func (t *telemetry) endIdem(span trace.Span, name string, c *Claim, err error) {
	var outcome string
	switch {
	case err == nil && c.replay:
		outcome = IdemReplayed
	case err == nil:
		outcome = IdemExecuted
	case errors.Is(err, ErrMismatch):
		outcome = IdemMismatch
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		outcome = OutcomeCanceled
	case errors.Is(err, ErrInFlight):
		outcome = IdemConflict
	default:
		outcome = OutcomeError
	}
	t.idem.Add(context.Background(), 1, t.attrs(idemName(name)).idem[outcome].add...)
	if span.IsRecording() {
		span.SetAttributes(AttrOutcome.String(outcome))
		if outcome == OutcomeError {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}
