package redigo

import (
	"fmt"
	"time"

	"github.com/locktag/locktag/locker/driver"
)

// Option configures the driver New returns.
type Option func(*options)

type options struct {
	pipeline int           // connections; 0: pooled calls
	stall    time.Duration // pipelined connection silent this long: broken
	errs     []error
}

var defaultOptions = options{stall: 2 * time.Second}

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

// WithPipelining sends every script call over conns long-lived connections
// with auto-pipelining instead of taking a pooled connection per call: a
// caller that finds nobody writing writes its call together with every call
// queued meanwhile, and the replies are read back in order (by a lone caller
// itself; under concurrency by one helper goroutine per connection).
// Concurrent goroutines then share system calls on both ends of the socket,
// which is what bounds a lock's throughput on loopback or a fast network:
// 1.1–1.25× the pooled rate at 16–64 concurrent lockers on the CI machine,
// 0.8× at two, the same for one (docs/locking.md, docs/benchmarks-load.md).
// One connection is right for most services; Redis runs commands on one
// thread either way.
//
// The pool is then used only to dial: its MaxActive does not bound these
// connections, and locker.ErrPoolExhausted does not occur. A connection
// silent for the stall timeout (WithStallTimeout) while calls are in flight
// is closed, failing those calls; the next call dials a new one. The
// default is off (0): each call takes a connection from the pool. conns
// must not be negative.
func WithPipelining(conns int) Option {
	return func(o *options) {
		if conns < 0 {
			o.bad("WithPipelining", conns, "must not be negative")
			return
		}
		o.pipeline = conns
	}
}

// WithStallTimeout sets how long a pipelined connection (WithPipelining)
// may stay silent while calls are in flight before it is closed as broken
// and its calls fail. Each call is also bounded by its own context. It has
// no effect without pipelining. The default is 2s (the locker's default
// call timeout); d must be positive.
func WithStallTimeout(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.bad("WithStallTimeout", d, "must be positive")
			return
		}
		o.stall = d
	}
}
