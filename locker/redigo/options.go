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

var defaultOptions = options{pipeline: 2, stall: 2 * time.Second}

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
// script calls with auto-pipelining (default 2); 0 selects pooled calls,
// each on a connection taken from the pool. The first connection carries
// every call that finds it idle or busy with several, so concurrent calls
// share system calls on both ends of the socket, which is what bounds a
// lock's throughput on a fast network; a call that finds it busy with just
// one goes to another idle connection, so that a few callers at a time do
// not wait on each other's replies. The pool is then used only to dial,
// and its IdleTimeout applies. Choose pooled calls to share one bounded
// pool with other code, or when a call's socket timeout must follow its
// own deadline. conns must not be negative. See docs/locking.md#pipelining.
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
// closed as broken and its calls fail (noticed within a quarter of it more;
// a pause of this process does not count as silence). Each call is also
// bounded by its own context. Raise it with locker.WithCallTimeout when a
// call may legitimately wait longer for Redis (a Redis busy with a slow
// command for seconds). It has no effect with pooled calls (WithPipelining(0)). The
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
