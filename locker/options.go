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
	grantWindow time.Duration
	maxCalls    int // per node; 0: unbounded

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
	grantWindow: 250 * time.Millisecond,
	maxCalls:    64,
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

// WithGrantWindow sets how long a lock handed to a queued waiter stays
// reserved for it before the waiter confirms it. A release hands the lock
// straight to the head of the queue; that waiter may have gone meanwhile
// (it gave up, its process crashed or is paused). So the hand-over sets a
// lease of only the grant window, and the new holder's first renewal, sent
// a third of the way into it, extends it to the holder's own terms — a
// holder done sooner never pays for that call. A grant nobody confirms
// lapses after the window: the next waiter's re-check then hands the lock
// on, and cuts off the other queue entries of the lapsed waiter's Locker
// (whose live waiters queue again). So a waiter that has gone costs the
// others one grant window, never a whole lease.
//
// Too short a window makes a live but slow holder (a stalled process, a
// very loaded machine) lose its lock at the hand-over. The default is
// 250ms; leases shorter than the window are granted in full.
func WithGrantWindow(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.grantWindow = d
		}
	}
}

// WithMaxConcurrentCalls bounds how many Redis calls the Locker has in
// flight per Redis node; further calls wait (within their context and the
// call timeout) for one to finish. Renewals and releases of held locks are
// not counted and never wait. The bound keeps a burst — thousands of
// waiters giving up at once — from dialling thousands of connections
// through a pool without MaxActive: with the default, a pool with MaxIdle 64
// serves every call from idle connections. A call that waited past its
// deadline for a slot fails with an error matching ErrNotSent and
// ErrUnavailable, having sent nothing. The default is 64; 0 removes the
// bound.
func WithMaxConcurrentCalls(n int) Option {
	return func(o *options) {
		if n >= 0 {
			o.maxCalls = n
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
