// Package lockotel records a locker.Locker's locks, rate decisions,
// idempotency checks and force-releases as OpenTelemetry spans and
// metrics. It is a module of its own, so services that do not trace
// their locks do not carry the OpenTelemetry modules:
//
//	go get github.com/locktag/locktag/locker/lockotel
//
// Turn it on when building the Locker:
//
//	lk, err := locker.New(redigo.New(pool), locker.WithObserver(lockotel.New()))
//
// New records to the global providers (otel.GetTracerProvider and
// otel.GetMeterProvider at the time New is called) unless
// WithTracerProvider or WithMeterProvider says otherwise. Until the
// global tracer provider is set, no span is started at all, so an
// Observer made before the SDK is configured costs a few no-op calls.
//
// Spans: locktag.obtain, locktag.hold (from obtaining to releasing or
// losing: the lease's Context carries it, so the protected work is traced
// inside it), locktag.release, locktag.rate, locktag.idempotency and
// locktag.force_release, with attributes in locktag's own namespace (the
// Attr* keys). Metrics: locktag.lock.acquire.duration,
// locktag.lock.wait.duration, locktag.lock.hold.duration,
// locktag.lock.outcomes, locktag.lock.renewals, locktag.lock.waiters,
// locktag.lock.held and locktag.idempotency.outcomes, by lock name;
// locktag.lock.outcomes also counts, with outcome tag_mistake, the
// requests lock guards refuse for a mistake in their tag
// (locker.MistakeObserver). The
// scope is ScopeName with the core module's version from the build
// information. ObserveServer adds, for one Locker, what its Redis masters
// and replicas say about the settings a lock's guarantees depend on:
// locktag.redis.evicted_keys, locktag.redis.eviction and
// locktag.redis.aof.
//
// The resolved key (AttrKey) is recorded only when the Locker was built
// with locker.WithKeyAttribute(true): names often hold user or order ids.
// Metrics never carry it. With this Observer, lock guards also add the
// request's trace id to the holder's label (locker.TraceIDSource).
//
// docs/observability.md lists every span, attribute and metric.
package lockotel
