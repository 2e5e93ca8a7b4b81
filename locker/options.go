package locker

import (
	"errors"
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
	logger       *slog.Logger            // nil: slog.Default() when a record is logged
	label        string                  // WithLabel; "": none
	bridge       func(key string) string // WithPlainLockBridge; nil: none
	allowEvict   bool                    // WithEvictionAllowed
	clockStep    time.Duration           // WithClockStepTolerance; 0: off

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
		clockStep:   time.Second,
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
// reserved until its first renewal confirms it: a gone waiter costs one
// window, not a lease. The default is 250ms; d must be positive. See
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

// WithMaxConcurrentCalls bounds the Redis calls in flight per node (not
// renewals and releases); a call that waits for a slot past its deadline
// fails with ErrNotSent, so a burst cannot queue thousands of calls ahead
// of a release. The default is 64; 0 removes the bound; n must not be
// negative. See docs/production.md#connections.
func WithMaxConcurrentCalls(n int) Option {
	return func(o *options) {
		if n < 0 {
			o.bad("WithMaxConcurrentCalls", n, "must not be negative")
			return
		}
		o.maxCalls = n
	}
}

// WithObserver sets the Observer of the Locker's events (lockotel.New()
// records OpenTelemetry spans and metrics). The default is none, at no
// cost. o must not be nil, and its Validate() error method, if any, must
// return nil.
func WithObserver(o Observer) Option {
	return func(opts *options) {
		if o == nil {
			opts.bad("WithObserver", o, "must not be nil")
			return
		}
		if v, ok := o.(interface{ Validate() error }); ok {
			if err := v.Validate(); err != nil {
				if !errors.Is(err, ErrBadOption) {
					err = fmt.Errorf("%w: WithObserver: %w", ErrBadOption, err)
				}
				opts.errs = append(opts.errs, err)
				return
			}
		}
		opts.observer = o
	}
}

// WithKeyAttribute adds the resolved lock name to log records and
// Observer events (lockotel: spans, never metrics). Off by default: names
// often hold user or order ids.
func WithKeyAttribute(on bool) Option {
	return func(o *options) { o.keyAttribute = on }
}

// WithLabel sets a description of this process, e.g. "shop@host-3 pid
// 412", that every lock it holds carries for operators (Holder.Label,
// followed by the call's Params.Label). The default is none; label must be
// at most MaxLabel bytes of valid UTF-8.
func WithLabel(label string) Option {
	return func(o *options) {
		if len(label) > MaxLabel || !utf8.ValidString(label) {
			o.bad("WithLabel", fmt.Sprintf("%.40q", label), fmt.Sprintf("must be at most %d bytes of valid UTF-8", MaxLabel))
			return
		}
		o.label = label
	}
}

// WithLogger sets where the Locker logs a lock lost while held (Error)
// and a failed Release (Warn), by the lock's name, template and fencing
// token. The default is slog.Default() at the time of each record; l must
// not be nil. See docs/operations.md#logs.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			o.bad("WithLogger", l, "must not be nil")
			return
		}
		o.logger = l
	}
}

// WithPlainLockBridge bridges every mutex of the Locker to the plain lock
// other libraries take for the same name (`SET name token NX PX ttl`,
// released by compare-and-delete: redsync, bsm/redislock), atomically in
// the mutex's own scripts: a mutex is taken only while the plain lock is
// free, and while held the plain key holds its token and expires with its
// lease. name maps a lock's key (as given to Obtain) to the plain lock's
// key; nil is the key itself. The default is no bridge. Only mutexes are
// bridged; a waiter for a name a plain locker holds looks again every 10ms
// at most. On Redis Cluster the plain key must share the lock's slot (the
// key itself does when it has no '{'). New only. See docs/migration.md.
func WithPlainLockBridge(name func(key string) string) Option {
	return func(o *options) {
		if name == nil {
			name = func(key string) string { return key }
		}
		o.bridge = name
		o.singleOnly = append(o.singleOnly, "WithPlainLockBridge")
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

// WithEvictionAllowed accepts a Redis whose maxmemory-policy may evict keys
// (any policy but noeviction, with a maxmemory set). By default Check, and
// so Ping and Healthy, refuse such a server with an error matching
// ErrEvictionPolicy: a held lock's key can be evicted under memory
// pressure and the lock granted again while its holder still runs, which
// the holder learns only at its next renewal. With this option Check
// passes and logs the risk once, at Warn, and Risks reports it. Use it
// only where a lock is an optimisation and every write it protects checks
// the fencing token. See docs/production.md#redis-configuration.
func WithEvictionAllowed() Option {
	return func(o *options) { o.allowEvict = true }
}

// WithClockStepTolerance sets how far the Redis server's clock may move
// away from the process's monotonic clock between two replies that carry
// it (a free mutex's fencing token, a renewal) before the Locker treats it
// as stepped, beyond a drift of 0.1% of the time between them. Stepped
// back, a lease that meets the step ends as lost (ErrClockStep), and
// Obtain is refused with ErrClockStep until the server's clock has caught
// up; stepped forward, it is logged once and listed by Risks. The default
// is 1s; 0 turns the check off; it must not be negative. NewRedlock
// ignores it. See docs/production.md#redis-configuration.
func WithClockStepTolerance(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.bad("WithClockStepTolerance", d, "must not be negative")
			return
		}
		o.clockStep = d
	}
}
