package locker

import (
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option configures a Locker.
type Option func(*options)

type options struct {
	prefix      string
	lease       time.Duration
	renewEvery  time.Duration
	callTimeout time.Duration
	linger      time.Duration
	drift       float64
	nodeTimeout time.Duration
	pipeline    int // connections; 0: pooled calls

	tracerProvider trace.TracerProvider
	meterProvider  metric.MeterProvider
	keyAttribute   bool
}

var defaultOptions = options{
	prefix:      "locktag:",
	lease:       30 * time.Second,
	renewEvery:  10 * time.Second,
	callTimeout: 2 * time.Second,
	linger:      time.Second,
	drift:       0.01,
}

func evaluateOptions(opts []Option) options {
	o := defaultOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithKeyPrefix sets the prefix of every Redis key and channel the locker
// writes. A lock named "order:42" lives at prefix + "{order:42}". The default
// is "locktag:". The prefix must not contain '{' or '}'.
func WithKeyPrefix(prefix string) Option {
	return func(o *options) { o.prefix = prefix }
}

// WithWatchdog sets the lease of locks obtained without a TTL and how often
// the watchdog renews it. The defaults are a 30s lease renewed every 10s
// (Redisson's). renewEvery must be well below lease; values that are not are
// replaced by lease/3.
func WithWatchdog(lease, renewEvery time.Duration) Option {
	return func(o *options) {
		if lease > 0 {
			o.lease = lease
		}
		o.renewEvery = renewEvery
		if o.renewEvery <= 0 || o.renewEvery >= o.lease {
			o.renewEvery = o.lease / 3
		}
	}
}

// WithCallTimeout bounds every Redis call the locker makes when the caller's
// context has no sooner deadline. Release, renewal and clean-up calls, which
// run on a fresh context, use it as their deadline. The default is 2s.
func WithCallTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.callTimeout = d
		}
	}
}

// WithUnsubscribeDelay sets how long the shared subscriber connection stays
// subscribed to a key's channel after its last local waiter left, so a hot
// key does not pay a SUBSCRIBE round trip per wait. The default is 1s.
func WithUnsubscribeDelay(d time.Duration) Option {
	return func(o *options) {
		if d >= 0 {
			o.linger = d
		}
	}
}

// WithDriftFactor sets the share of a Redlock lease assumed lost to clock
// drift between the masters: a Redlock lease is valid for
// TTL - elapsed - TTL*factor - 2ms. The default is 0.01 (the Redlock paper's).
// It has no effect on a single-node Locker.
func WithDriftFactor(f float64) Option {
	return func(o *options) {
		if f >= 0 && f < 0.5 {
			o.drift = f
		}
	}
}

// WithNodeTimeout bounds each Redlock call to one master, so a slow or dead
// master is skipped quickly instead of eating the lease. The default is a
// tenth of the lease, at least 50ms and at most 500ms. It has no effect on a
// single-node Locker.
func WithNodeTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.nodeTimeout = d
		}
	}
}

// WithPipelining makes [New] and [NewRedlock] send every script call over
// conns long-lived connections per Redis node with auto-pipelining instead
// of taking a pooled connection per call: a caller that finds nobody writing
// writes its call together with every call queued meanwhile, and the
// replies are read back in order (by a lone caller itself; under
// concurrency by one helper goroutine per connection). Concurrent
// goroutines then share system calls on both ends of the socket, which is
// what bounds a lock's throughput on loopback or a fast network: 1.1–1.25×
// the pooled rate at 16–64 concurrent lockers on the CI machine, 0.8× at
// two, the same for one (docs/locking.md, docs/benchmarks-load.md). One
// connection is right for most services; Redis runs commands on one thread
// either way.
//
// The pool is then used only to dial: its MaxActive does not bound these
// connections, and ErrPoolExhausted does not occur. A connection silent for
// the call timeout (WithCallTimeout) while calls are in flight is closed,
// failing those calls with ErrUnavailable; the next call dials a new one.
// The default is off (0): each call takes a connection from the pool. It
// has no effect on [NewWithDriver].
func WithPipelining(conns int) Option {
	return func(o *options) {
		if conns >= 0 {
			o.pipeline = conns
		}
	}
}

// WithTracerProvider sets where spans go. The default is the global
// provider (otel.GetTracerProvider) at the time New is called.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracerProvider = tp }
}

// WithMeterProvider sets where metrics go. The default is the global
// provider (otel.GetMeterProvider) at the time New is called.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.meterProvider = mp }
}

// WithKeyAttribute adds the resolved lock name (attribute locktag.key) to
// spans. It is off by default: names often hold user or order ids, which
// have no place in traces unless you decide so. Metrics never carry it.
func WithKeyAttribute(on bool) Option {
	return func(o *options) { o.keyAttribute = on }
}
