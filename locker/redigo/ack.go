package redigo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/locker/driver"
)

// EvalAck runs s and then WAIT replicas timeout, both written at once on
// one connection taken from the pool (driver.Acker). WAIT holds its
// connection until the replicas answer, so acknowledged calls never go on
// the pipelined connection, where every other call would queue behind
// them; a priority call (a renewal) finds the reserved connection when the
// pool is exhausted, as Eval does with pooled calls.
func (d *redigoDriver) EvalAck(ctx context.Context, replicas int, timeout time.Duration, s *driver.Script, keys driver.Keys, args ...any) (any, int, error) {
	if driver.IsPriority(ctx) && d.exhausted() {
		d.reserved.Lock()
		defer d.reserved.Unlock()
		c, err := d.reservedConnLocked(ctx)
		if err != nil {
			return nil, 0, err
		}
		return d.evalAck(ctx, c, replicas, timeout, s, keys, args)
	}
	c, err := d.pool.GetContext(ctx)
	if err != nil {
		if errors.Is(err, redis.ErrPoolExhausted) {
			err = fmt.Errorf("%w (redigo MaxActive reached)", driver.ErrPoolExhausted)
		}
		return nil, 0, driver.NotSent(err)
	}
	defer c.Close()
	return d.evalAck(ctx, c, replicas, timeout, s, keys, args)
}

func (d *redigoDriver) evalAck(ctx context.Context, c redis.Conn, replicas int, timeout time.Duration, s *driver.Script, keys driver.Keys, args []any) (any, int, error) {
	cwt, ok := c.(redis.ConnWithTimeout)
	if !ok {
		return nil, 0, errors.New("redigo: connection without timeout support")
	}
	var read time.Duration // 0: the connection's own read timeout
	if dl, ok := ctx.Deadline(); ok {
		if read = time.Until(dl); read <= 0 {
			return nil, 0, driver.NotSent(context.DeadlineExceeded)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, driver.NotSent(err)
	}
	argv := scriptArgs(nil, s, keys, args)
	waitMS := max(timeout.Milliseconds(), 1)
	v, acked, err := roundTripAck(cwt, read, "EVALSHA", argv, replicas, waitMS)
	if isNoScript(err) {
		argv[0] = s.SourceArg()
		v, acked, err = roundTripAck(cwt, read, "EVAL", argv, replicas, waitMS)
	}
	if err != nil {
		return nil, 0, err
	}
	return driver.NormalizeReply(v), acked, nil
}

// roundTripAck writes cmd and WAIT together and reads both replies; a
// failed WAIT (a broken connection) is the error even when cmd's reply
// arrived.
func roundTripAck(c redis.ConnWithTimeout, read time.Duration, cmd string, argv []any, replicas int, waitMS int64) (any, int, error) {
	if err := c.Send(cmd, argv...); err != nil {
		return nil, 0, err
	}
	if err := c.Send("WAIT", replicas, waitMS); err != nil {
		return nil, 0, err
	}
	if err := c.Flush(); err != nil {
		return nil, 0, err
	}
	v, err := c.ReceiveWithTimeout(read)
	n, werr := redis.Int(c.ReceiveWithTimeout(read))
	if werr != nil {
		return nil, 0, fmt.Errorf("redigo: WAIT: %w", werr)
	}
	return v, n, err
}
