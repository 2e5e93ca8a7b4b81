package redigo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/locker/driver"
)

// redigoDriver is the pooled driver (WithPipelining(0)): a redigo pool for
// scripts and one connection dialled with it for pub/sub. The pipelined
// driver (the default) embeds it for Listen and dialling.
type redigoDriver struct {
	pool *redis.Pool

	// reserved serves priority calls (driver.IsPriority) when the pool is
	// exhausted; dialled on first need, one call at a time.
	reserved struct {
		sync.Mutex
		c redis.Conn
	}
}

func (d *redigoDriver) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	if driver.IsPriority(ctx) && d.exhausted() {
		return d.evalReserved(ctx, s, keys, args)
	}
	c, err := d.pool.GetContext(ctx)
	if err != nil {
		if errors.Is(err, redis.ErrPoolExhausted) {
			err = fmt.Errorf("%w (redigo MaxActive reached)", driver.ErrPoolExhausted)
		}
		return nil, driver.NotSent(err)
	}
	defer c.Close()
	return d.eval(ctx, c, s, keys, args)
}

// Close closes the reserved connection (Locker.Close calls it). The pool
// is the caller's and stays open.
func (d *redigoDriver) Close() error {
	d.reserved.Lock()
	defer d.reserved.Unlock()
	if d.reserved.c != nil {
		_ = d.reserved.c.Close()
		d.reserved.c = nil
	}
	return nil
}

// exhausted reports whether taking a connection from the pool would fail
// or block.
func (d *redigoDriver) exhausted() bool {
	if d.pool.MaxActive <= 0 {
		return false
	}
	st := d.pool.Stats()
	return st.ActiveCount >= d.pool.MaxActive && st.IdleCount == 0
}

// evalReserved runs a priority call on the reserved connection.
func (d *redigoDriver) evalReserved(ctx context.Context, s *driver.Script, keys driver.Keys, args []any) (any, error) {
	d.reserved.Lock()
	defer d.reserved.Unlock()
	c, err := d.reservedConnLocked(ctx)
	if err != nil {
		return nil, err
	}
	return d.eval(ctx, c, s, keys, args)
}

// reservedConnLocked returns the reserved connection, dialling it when
// there is none or it broke; d.reserved is locked.
func (d *redigoDriver) reservedConnLocked(ctx context.Context) (redis.Conn, error) {
	if d.reserved.c == nil || d.reserved.c.Err() != nil {
		if d.reserved.c != nil {
			_ = d.reserved.c.Close()
		}
		c, err := d.dial(ctx)
		if err != nil {
			return nil, driver.NotSent(err)
		}
		d.reserved.c = c
	}
	return d.reserved.c, nil
}

func (d *redigoDriver) dial(ctx context.Context) (redis.Conn, error) {
	switch {
	case d.pool.DialContext != nil:
		return d.pool.DialContext(ctx)
	case d.pool.Dial != nil:
		return d.pool.Dial()
	}
	return nil, errors.New("redigo: redis.Pool has neither Dial nor DialContext")
}

func (d *redigoDriver) eval(ctx context.Context, c redis.Conn, s *driver.Script, keys driver.Keys, args []any) (any, error) {
	cwt, ok := c.(redis.ConnWithTimeout)
	if !ok {
		return nil, errors.New("redigo: connection without timeout support")
	}
	// DoWithTimeout, not DoContext: redigo's DoContext starts a goroutine per
	// call, which costs more than the call on a busy machine. A call in flight
	// is bounded by ctx's deadline instead of interrupted by cancellation.
	var timeout time.Duration
	if dl, ok := ctx.Deadline(); ok {
		if timeout = time.Until(dl); timeout <= 0 {
			return nil, driver.NotSent(context.DeadlineExceeded)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, driver.NotSent(err)
	}
	// The argument list is only read while the command is written, within
	// DoWithTimeout: a pooled one saves an allocation per call.
	buf := argvPool.Get().(*[]any)
	argv := scriptArgs((*buf)[:0], s, keys, args)
	v, err := cwt.DoWithTimeout(timeout, "EVALSHA", argv...)
	if isNoScript(err) {
		argv[0] = s.SourceArg()
		v, err = cwt.DoWithTimeout(timeout, "EVAL", argv...)
	}
	clear(argv)
	*buf = argv[:0]
	argvPool.Put(buf)
	if err != nil {
		return nil, err
	}
	return driver.NormalizeReply(v), nil
}

// argvPool holds argument lists for scriptArgs (as *[]any: putting a slice
// itself into a sync.Pool would allocate).
var argvPool = sync.Pool{New: func() any { return new([]any) }}

// scriptArgs appends EVALSHA's arguments to dst: the script's hash, the key
// count, the keys (boxed once, in keys), the arguments. The caller swaps in
// the source for EVAL.
func scriptArgs(dst []any, s *driver.Script, keys driver.Keys, args []any) []any {
	dst = append(dst, s.HashArg(), keys.Len())
	dst = append(dst, keys.Args()...)
	return append(dst, args...)
}

// isNoScript reports whether err is Redis's NOSCRIPT reply: EVALSHA of a
// script the server does not have, to be sent again by EVAL.
func isNoScript(err error) bool {
	e, ok := err.(redis.Error)
	return ok && strings.HasPrefix(string(e), "NOSCRIPT")
}
