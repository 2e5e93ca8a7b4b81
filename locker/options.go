package locker

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"
)

// Option configures a Locker. Options are checked once, by New or
// NewRedlock: an invalid value is an error wrapping ErrBadOption that names
// the option, never silently corrected or ignored.
type Option func(*options)

type options struct {
	prefix      string
	lease       time.Duration
	renewEvery  time.Duration
	callTimeout time.Duration
	linger      time.Duration
	drift       float64
	nodeTimeout time.Duration // 0: derived from the lease (see WithNodeTimeout)
	grantWindow time.Duration
	maxCalls    int           // per node; 0: unbounded
	ackReplicas int           // WithReplicaAck; 0: none
	ackTimeout  time.Duration // WithReplicaAck

	observer     Observer // WithObserver; nil: none
	keyAttribute bool
	logger       *slog.Logger // nil: slog.Default() when a record is logged
	label        string       // WithLabel; "": none

	errs        []error  // invalid values, one per option
	redlockOnly []string // Redlock-only options given
	singleOnly  []string // options New takes and NewRedlock refuses
}

func defaultOptions() options {
	return options{
		prefix:      "locktag:",
		lease:       30 * time.Second,
		renewEvery:  10 * time.Second,
		callTimeout: 2 * time.Second,
		linger:      time.Second,
		drift:       0.01,
		grantWindow: 250 * time.Millisecond,
		maxCalls:    64,
	}
}

// evaluateOptions applies opts to the defaults and returns the errors of
// the invalid ones. o.redlockOnly lists the Redlock-only options given,
// which New refuses.
func evaluateOptions(opts []Option) (options, []error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt == nil {
			o.errs = append(o.errs, fmt.Errorf("%w: nil Option", ErrBadOption))
			continue
		}
		opt(&o)
	}
	errs := o.errs
	o.errs = nil
	return o, errs
}

// bad records an invalid value of option.
func (o *options) bad(option string, value any, why string) {
	o.errs = append(o.errs, fmt.Errorf("%w: %s(%v): %s", ErrBadOption, option, value, why))
}

// WithKeyPrefix sets the prefix of every Redis key and channel the locker
// writes. A lock named "order:42" lives at prefix + "{order:42}". The default
// is "locktag:". The prefix must not contain '{' or '}'.
func WithKeyPrefix(prefix string) Option {
	return func(o *options) {
		if strings.ContainsAny(prefix, "{}") {
			o.bad("WithKeyPrefix", fmt.Sprintf("%q", prefix), "must not contain '{' or '}'")
			return
		}
		o.prefix = prefix
	}
}

// WithWatchdog sets the lease of locks obtained without a TTL (and of
// idempotency claims without a lease) and how often the watchdog renews it.
// The defaults are a 30s lease renewed every 10s (Redisson's). lease must be
// positive and renewEvery positive and below lease; a third of the lease
// leaves room for two failed renewals.
func WithWatchdog(lease, renewEvery time.Duration) Option {
	return func(o *options) {
		if lease <= 0 || renewEvery <= 0 || renewEvery >= lease {
			o.bad("WithWatchdog", fmt.Sprintf("%v, %v", lease, renewEvery), "need 0 < renewEvery < lease")
			return
		}
		o.lease, o.renewEvery = lease, renewEvery
	}
}

// WithCallTimeout bounds every Redis call the locker makes when the caller's
// context has no sooner deadline. Release, renewal and clean-up calls, which
// run on a fresh context, use it as their deadline. The default is 2s; d
// must be positive.
func WithCallTimeout(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.bad("WithCallTimeout", d, "must be positive")
			return
		}
		o.callTimeout = d
	}
}

// WithUnsubscribeDelay sets how long the shared subscriber connection stays
// subscribed to a key's channel after its last local waiter left, so a hot
// key does not pay a SUBSCRIBE round trip per wait. The default is 1s; 0
// unsubscribes at once; d must not be negative.
func WithUnsubscribeDelay(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.bad("WithUnsubscribeDelay", d, "must not be negative")
			return
		}
		o.linger = d
	}
}

// WithDriftFactor sets the share of a Redlock lease assumed lost to clock
// drift between the masters: a Redlock lease is valid for
// TTL - elapsed - TTL*factor - 2ms. The default is 0.01 (the Redlock
// paper's); f must be in [0, 0.5). Redlock only: New refuses it.
func WithDriftFactor(f float64) Option {
	return func(o *options) {
		o.redlockOnly = append(o.redlockOnly, "WithDriftFactor")
		if !(f >= 0 && f < 0.5) {
			o.bad("WithDriftFactor", f, "must be in [0, 0.5)")
			return
		}
		o.drift = f
	}
}

// WithNodeTimeout bounds each Redlock call to one master, so a slow or dead
// master is skipped quickly instead of eating the lease. The default is a
// tenth of the lease, at least 50ms and at most 500ms; d must be positive.
// Redlock only: New refuses it.
func WithNodeTimeout(d time.Duration) Option {
	return func(o *options) {
		o.redlockOnly = append(o.redlockOnly, "WithNodeTimeout")
		if d <= 0 {
			o.bad("WithNodeTimeout", d, "must be positive")
			return
		}
		o.nodeTimeout = d
	}
}

// WithGrantWindow sets how long a lock handed to a queued waiter stays
// reserved for it before the waiter's first renewal (at a third of it)
// confirms it: a waiter that has gone costs the others one window, never
// a whole lease; too short a window makes a slow holder lose the lock at
// the hand-over. The default is 250ms; d must be positive. See
// docs/locking.md#the-grant-window.
func WithGrantWindow(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.bad("WithGrantWindow", d, "must be positive")
			return
		}
		o.grantWindow = d
	}
}

// WithMaxConcurrentCalls bounds the Redis calls in flight per node;
// further calls wait (within their context and the call timeout), and one
// that waited past its deadline fails with ErrNotSent (and ErrUnavailable)
// having sent nothing. Renewals and releases are not counted. It keeps a
// burst of waiters from queueing thousands of calls ahead of a release on
// one connection, or dialling thousands through a pool. The default is 64;
// 0 removes the bound; n must not be negative. See docs/production.md#connections.
func WithMaxConcurrentCalls(n int) Option {
	return func(o *options) {
		if n < 0 {
			o.bad("WithMaxConcurrentCalls", n, "must not be negative")
			return
		}
		o.maxCalls = n
	}
}

// WithObserver sets the Observer that receives the Locker's events:
// lockotel.New() records them as OpenTelemetry spans and metrics. The
// default is none: nothing is recorded, at no cost. o must not be nil
// (leave the option out for the default); an Observer with a
// Validate() error method (lockotel's) must return nil from it.
func WithObserver(o Observer) Option {
	return func(opts *options) {
		if o == nil {
			opts.bad("WithObserver", o, "must not be nil")
			return
		}
		if v, ok := o.(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				opts.errs = append(opts.errs, fmt.Errorf("%w: WithObserver: %w", ErrBadOption, err))
				return
			}
		}
		opts.observer = o
	}
}

// WithKeyAttribute adds the resolved lock name (attribute locktag.key) to
// the log records of WithLogger and to the events the Observer receives
// (with lockotel: to spans). It is off by default: names often hold user
// or order ids, which have no place in traces or logs unless you decide
// so. Metrics never carry it.
func WithKeyAttribute(on bool) Option {
	return func(o *options) { o.keyAttribute = on }
}

// WithLabel sets a human-readable description of this process that every
// lock it holds carries, for operators (Inspect shows it as Holder.Label),
// e.g. "shop@host-3 pid 412". A call's Params.Label is appended to it
// ("shop@host-3 pid 412; POST /orders/:id/pay"). The default is none: a
// lock without a label stores nothing for it. label must be at most
// MaxLabel bytes of valid UTF-8.
func WithLabel(label string) Option {
	return func(o *options) {
		if len(label) > MaxLabel || !utf8.ValidString(label) {
			o.bad("WithLabel", fmt.Sprintf("%.40q", label), fmt.Sprintf("must be at most %d bytes of valid UTF-8", MaxLabel))
			return
		}
		o.label = label
	}
}

// WithLogger sets where the Locker logs a lock lost while held (at Error,
// with its cause) and a failed Release (at Warn). Records carry the lock's
// name (Params.Name: the route or full method for the adapters), its key
// template and fencing token, never the resolved key unless
// WithKeyAttribute(true). The default is slog.Default() at the time of
// each record; l must not be nil (leave the option out for the default).
// See docs/operations.md for the records.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			o.bad("WithLogger", l, "must not be nil")
			return
		}
		o.logger = l
	}
}

// WithReplicaAck makes an acquisition count, and a renewal succeed, only
// once replicas replicas acknowledged its write (WAIT on the script's
// connection, driver.Acker), so a failover cannot hand out a lock a second
// time. An acquisition not acknowledged within timeout is released and
// fails with ErrNotReplicated (and ErrUnavailable). The default is none;
// replicas >= 1, 0 < timeout < the call timeout; New only, with a driver
// that implements driver.Acker. See docs/scale-out.md#replica-acknowledgement-withreplicaack.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	return func(o *options) {
		o.singleOnly = append(o.singleOnly, "WithReplicaAck")
		if replicas < 1 || timeout <= 0 {
			o.bad("WithReplicaAck", fmt.Sprintf("%d, %v", replicas, timeout), "need replicas >= 1 and a positive timeout")
			return
		}
		o.ackReplicas, o.ackTimeout = replicas, timeout
	}
}
