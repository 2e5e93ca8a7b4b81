package redigo

import (
	"fmt"
	"time"

	"github.com/locktag/locktag/locker/driver"
)

// Option configures the driver New returns.
type Option func(*options)

type options struct {
	pipeline int           // pipelined connections; 0: pooled calls
	stall    time.Duration // pipelined connection silent this long: broken
	errs     []error
}

var defaultOptions = options{pipeline: 1, stall: 2 * time.Second}

func evaluateOptions(opts []Option) options {
	o := defaultOptions
	o.errs = nil
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

func (o *options) bad(option string, value any, why string) {
	o.errs = append(o.errs, fmt.Errorf("%w: redigo.%s(%v): %s", driver.ErrBadOption, option, value, why))
}

// WithPipelining sets how many long-lived connections carry the driver's
// script calls with auto-pipelining; 0 selects pooled calls instead, each
// call on a connection taken from the pool. The default is 1.
//
// Pipelined (conns > 0): a caller that finds nobody writing writes its call
// together with every call queued meanwhile, and the replies are read back
// in order (by a lone caller itself; under concurrency by one helper
// goroutine per connection). Concurrent goroutines then share system calls
// on both ends of the socket, which is what bounds a lock's throughput on
// loopback or a fast network: in the same run on the CI machine it made
// 1.6–2.1× the pooled rate at 16 and 64 concurrent lockers, at less than
// half the Redis CPU per lock+unlock, and tied with it at one
// (docs/locking.md, docs/benchmarks-load.md). One connection is right for
// most services; Redis runs commands on one thread either way, and conns > 1
// spreads calls round-robin. The pool is then used only to dial: its
// MaxActive and MaxIdle do not bound these connections, and
// locker.ErrPoolExhausted does not occur. Its IdleTimeout applies: a
// connection unused that long is closed and a new one dialled before the
// next call, so a server timeout or a proxy's idle cut-off costs no call.
// A connection silent for the stall timeout (WithStallTimeout) while calls
// are in flight is closed, failing those calls; the next call dials a new
// one.
//
// Pooled (0): every call takes a connection from the pool (waiting or
// failing with locker.ErrPoolExhausted at MaxActive, as the pool is set
// up), and renewals and releases of held leases run on one reserved
// connection when the pool is exhausted. Choose it to share one bounded
// pool with other code, or when a call's socket timeout must follow its
// own deadline rather than the stall timeout.
//
// conns must not be negative.
func WithPipelining(conns int) Option {
	return func(o *options) {
		if conns < 0 {
			o.bad("WithPipelining", conns, "must not be negative")
			return
		}
		o.pipeline = conns
	}
}

// WithStallTimeout sets how long a pipelined connection (WithPipelining,
// the default) may stay silent while calls are in flight before it is
// closed as broken and its calls fail. Each call is also bounded by its own
// context. Raise it with locker.WithCallTimeout when a call may
// legitimately wait longer for Redis (a Redis busy with a slow command for
// seconds). It has no effect with pooled calls (WithPipelining(0)). The
// default is 2s (the locker's default call timeout); d must be positive.
func WithStallTimeout(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.bad("WithStallTimeout", d, "must be positive")
			return
		}
		o.stall = d
	}
}
