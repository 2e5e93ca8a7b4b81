package lockotel

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/locktag/locktag/locker"
)

// ScopeName is the instrumentation scope of every span and metric locktag
// records.
const ScopeName = "github.com/locktag/locktag"

// Attribute keys, in locktag's own namespace.
const (
	AttrLockName    = attribute.Key("locktag.lock.name")      // low-cardinality name: Params.Name, the route or full method
	AttrKeyTemplate = attribute.Key("locktag.key.template")   // the tag's key template, e.g. "order:{path.id}"
	AttrKey         = attribute.Key("locktag.key")            // the resolved lock name; only with locker.WithKeyAttribute
	AttrOutcome     = attribute.Key("locktag.outcome")        // see locker's Outcome and Idem constants
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

	// AttrReason is the reason of a force-release.
	AttrReason = attribute.Key("locktag.force_release.reason")
	// AttrActor is who asked for a force-release (locker.WithActor).
	AttrActor = attribute.Key("locktag.force_release.actor")
	// AttrOwners are the owner tokens a force-release freed.
	AttrOwners = attribute.Key("locktag.force_release.owners")
)

// Observer records a Locker's events as OpenTelemetry spans and metrics
// (see the package documentation). It implements locker.Observer and
// locker.TraceIDSource; one Observer may serve several Lockers.
type Observer struct {
	tracer trace.Tracer
	// unset is OpenTelemetry's global stand-in provider, which delegates
	// to the provider otel.SetTracerProvider sets, when no
	// WithTracerProvider was given and none was set yet; nil otherwise.
	// While otel.GetTracerProvider still returns it, no span can be
	// recorded, and start skips the tracer: the stand-in's no-op spans
	// cost 2 allocations each, 6 per lock+unlock. Once a provider is set
	// the check fails and spans go to it.
	unset     trace.TracerProvider
	acquire   metric.Float64Histogram
	wait      metric.Float64Histogram
	hold      metric.Float64Histogram
	outcomes  metric.Int64Counter
	renewals  metric.Int64Counter
	waiters   metric.Int64UpDownCounter
	held      metric.Int64UpDownCounter
	idem      metric.Int64Counter
	attrCache sync.Map // name -> *nameAttrs
	err       error    // the first bad option (see Validate)
}

var (
	_ locker.Observer        = (*Observer)(nil)
	_ locker.TraceIDSource   = (*Observer)(nil)
	_ locker.MistakeObserver = (*Observer)(nil)
)

// New returns an Observer recording to the global tracer and meter
// providers, or those the options set. Pass it to locker.WithObserver:
//
//	lk, err := locker.New(d, locker.WithObserver(lockotel.New()))
//
// An invalid option is reported by locker.New (through Validate).
func New(opts ...Option) *Observer {
	o, err := evaluateOptions(opts)
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
	t := &Observer{tracer: tp.Tracer(ScopeName, trace.WithInstrumentationVersion(moduleVersion)), unset: unset, err: err}
	buckets := metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
	// Instrument creation errors leave no-op instruments; nothing to do.
	t.acquire, _ = m.Float64Histogram("locktag.lock.acquire.duration", metric.WithUnit("s"),
		metric.WithDescription("Time an Obtain call took, waiting included, by outcome."), buckets)
	t.wait, _ = m.Float64Histogram("locktag.lock.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("Time Obtain calls spent waiting for a busy lock."), buckets)
	t.hold, _ = m.Float64Histogram("locktag.lock.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("Time locks were held, from obtained to released or lost."), buckets)
	t.outcomes, _ = m.Int64Counter("locktag.lock.outcomes", metric.WithUnit("{outcome}"),
		metric.WithDescription("Obtain outcomes (acquired, reentered, busy, canceled, error, protocol), locks lost, rate-limit decisions (admitted, rate_limited), and requests refused for a mistake in their tag (tag_mistake)."))
	t.renewals, _ = m.Int64Counter("locktag.lock.renewals", metric.WithUnit("{renewal}"),
		metric.WithDescription("Watchdog renewals by result (ok, error, refused)."))
	t.idem, _ = m.Int64Counter("locktag.idempotency.outcomes", metric.WithUnit("{request}"),
		metric.WithDescription("Idempotency guard outcomes (executed, replayed, conflict, mismatch, canceled, error, protocol)."))
	t.waiters, _ = m.Int64UpDownCounter("locktag.lock.waiters", metric.WithUnit("{waiter}"),
		metric.WithDescription("Obtain calls waiting for a busy lock now."))
	t.held, _ = m.Int64UpDownCounter("locktag.lock.held", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks held now (obtained, neither released nor lost), by lock name."))
	return t
}

// Validate returns the error of the first invalid option New was given
// (wrapping locker.ErrBadOption), or nil. locker.WithObserver calls it, so
// locker.New refuses an Observer built with a bad option.
func (t *Observer) Validate() error { return t.err }

// TraceID returns the id of the trace of ctx's span context, or "" when
// it has no valid one. Lock guards add it to the holder's label.
func (t *Observer) TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}

// TagMistake counts a request a lock guard refused for a mistake in its
// tag: locktag.lock.outcomes with outcome tag_mistake, by lock name. An
// alert on it finds a route a start-up check did not see
// (docs/routes.md).
func (t *Observer) TagMistake(ctx context.Context, e locker.MistakeEvent) {
	t.outcomes.Add(ctx, 1, t.attrs(lockName(e.Params)).outcomes[locker.OutcomeTagMistake].add...)
}

// isGlobalStandIn reports whether tp is the stand-in otel.GetTracerProvider
// returns until a provider is set (an unexported type; checked once per
// Observer).
func isGlobalStandIn(tp trace.TracerProvider) bool {
	t := reflect.TypeOf(tp)
	return t.Kind() == reflect.Pointer && t.Elem().PkgPath() == "go.opentelemetry.io/otel/internal/global" && t.Elem().Name() == "tracerProvider"
}

// noSpan is the span of a call that is not traced: every method a no-op.
var noSpan = trace.SpanFromContext(context.Background())

// start opens span name under ctx, or returns ctx and noSpan when no tracer
// provider can record it (see unset).
func (t *Observer) start(ctx context.Context, name string) (context.Context, trace.Span) {
	if t.unset != nil {
		if otel.GetTracerProvider() == t.unset {
			return ctx, noSpan
		}
	}
	return t.tracer.Start(ctx, name)
}

// spanOf is the span a Start method returned as state.
func spanOf(state any) trace.Span {
	if s, ok := state.(trace.Span); ok {
		return s
	}
	return noSpan
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

func (t *Observer) attrs(name string) *nameAttrs {
	if a, ok := t.attrCache.Load(name); ok {
		return a.(*nameAttrs)
	}
	a := &nameAttrs{
		name:     newAttrOpts(AttrLockName.String(name)),
		outcomes: make(map[string]attrOpts),
		renewals: make(map[string]attrOpts),
		idem:     make(map[string]attrOpts),
	}
	for _, o := range []string{locker.IdempotencyExecuted, locker.IdempotencyReplayed, locker.IdempotencyConflict, locker.IdempotencyMismatch, locker.OutcomeCanceled, locker.OutcomeError, locker.OutcomeProtocol} {
		a.idem[o] = newAttrOpts(AttrLockName.String(name), AttrOutcome.String(o))
	}
	for _, o := range []string{locker.OutcomeAcquired, locker.OutcomeReentered, locker.OutcomeBusy, locker.OutcomeCanceled,
		locker.OutcomeError, locker.OutcomeLost, locker.OutcomeAdmitted, locker.OutcomeRateLimited, locker.OutcomeProtocol,
		locker.OutcomeTagMistake} {
		a.outcomes[o] = newAttrOpts(AttrLockName.String(name), AttrOutcome.String(o))
	}
	for _, r := range []string{renewalOK, renewalError, renewalRefused} {
		a.renewals[r] = newAttrOpts(AttrLockName.String(name), AttrRenewal.String(r))
	}
	v, _ := t.attrCache.LoadOrStore(name, a)
	return v.(*nameAttrs)
}

// lockName is the name spans and metrics use for a lock.
func lockName(p locker.Params) string {
	if p.Name != "" {
		return p.Name
	}
	if p.Template != "" {
		return p.Template
	}
	return "locker"
}

// isLost reports whether a hold ended with cause was lost.
func isLost(cause error) bool { return errors.Is(cause, locker.ErrLockLost) }
