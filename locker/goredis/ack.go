package goredis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/locker/driver"
)

// EvalAck runs s and then WAIT replicas timeout in one pipeline
// (driver.Acker): go-redis writes a pipeline on one connection, so WAIT
// counts the replicas that have the script's writes. On a Cluster the
// pipeline goes to the master of the first key's slot (a keyless WAIT
// would go elsewhere); a Sentinel client's goes to the current master.
func (d *redisDriver) EvalAck(ctx context.Context, replicas int, timeout time.Duration, s *driver.Script, keys driver.Keys, args ...any) (any, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, driver.NotSent(err)
	}
	var c redis.Cmdable = d.c
	if cc, ok := d.c.(*redis.ClusterClient); ok && keys.Len() > 0 {
		node, err := cc.MasterForKey(ctx, keys.Names()[0])
		if err != nil {
			return nil, 0, driver.NotSent(err)
		}
		c = node
	}
	v, acked, err := pipelineAck(ctx, c, replicas, timeout, func(p redis.Pipeliner) *redis.Cmd {
		return p.EvalSha(ctx, s.Hash(), keys.Names(), args...)
	})
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		v, acked, err = pipelineAck(ctx, c, replicas, timeout, func(p redis.Pipeliner) *redis.Cmd {
			return p.Eval(ctx, s.Source(), keys.Names(), args...)
		})
	}
	switch {
	case err == nil:
		return driver.NormalizeReply(v), acked, nil
	case errors.Is(err, redis.Nil):
		return nil, acked, nil
	case errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted):
		return nil, 0, fmt.Errorf("%w: %w (go-redis: %w)", driver.ErrNotSent, driver.ErrPoolExhausted, err)
	}
	return nil, 0, err
}

// pipelineAck sends the script call script adds and WAIT in one pipeline
// and returns the script's reply (or error) and WAIT's count; a failed
// WAIT is the error.
func pipelineAck(ctx context.Context, c redis.Cmdable, replicas int, timeout time.Duration, script func(redis.Pipeliner) *redis.Cmd) (any, int, error) {
	var ev *redis.Cmd
	var wait *redis.Cmd
	_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		ev = script(p)
		wait = p.Do(ctx, "WAIT", replicas, max(timeout.Milliseconds(), 1))
		return nil
	})
	n, werr := wait.Int64()
	if werr != nil {
		if err := ev.Err(); err != nil && !errors.Is(err, redis.Nil) {
			werr = err // the script's error says more (NOSCRIPT, a broken connection)
		}
		return nil, 0, werr
	}
	v, err := ev.Result()
	return v, int(n), err
}
