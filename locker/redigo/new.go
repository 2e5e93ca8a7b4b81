package redigo

import (
	"context"
	"errors"
	"fmt"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/locker/driver"
)

// New returns a driver on a redigo pool. Script calls are pipelined over
// one long-lived connection dialled with the pool's Dial (WithPipelining);
// Listen dials one more, the subscriber connection all waiters share. The
// Locker's Close closes those connections, never the pool. A nil pool or
// an invalid option is reported by locker.New (driver.Validator):
//
//	lk, err := locker.New(redigo.New(pool))                            // pipelined
//	lk, err := locker.New(redigo.New(pool, redigo.WithPipelining(0))) // pooled calls
func New(pool *redis.Pool, opts ...Option) driver.Driver {
	o := evaluateOptions(opts)
	if pool == nil {
		o.errs = append(o.errs, fmt.Errorf("%w: redigo.New: nil pool", driver.ErrBadOption))
	}
	if err := errors.Join(o.errs...); err != nil {
		return invalid{err}
	}
	if o.pipeline > 0 {
		return newPipelined(pool, o.pipeline, o.stall)
	}
	return &redigoDriver{pool: pool}
}

// invalid is the driver of a New call with bad arguments: Validate reports
// them, and every call fails with them, having sent nothing.
type invalid struct{ err error }

func (d invalid) Validate() error { return d.err }

func (d invalid) Eval(context.Context, *driver.Script, driver.Keys, ...any) (any, error) {
	return nil, driver.NotSent(d.err)
}

func (d invalid) Listen(context.Context, func(string, string), func(error)) (driver.Listener, error) {
	return nil, d.err
}
