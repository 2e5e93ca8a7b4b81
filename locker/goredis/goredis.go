package goredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/locker/driver"
)

// redisDriver is a driver.Driver on a go-redis client.
type redisDriver struct {
	c redis.UniversalClient
	// ctxAware is true when the client applies ctx deadlines to its socket
	// reads and writes itself (ContextTimeoutEnabled); otherwise Eval
	// enforces ctx on its own.
	ctxAware bool
}

// New returns a [driver.Driver] on c: a [redis.Client] (also one made by
// [redis.NewFailoverClient] for Sentinel), a [redis.ClusterClient], or
// whatever [redis.NewUniversalClient] returns. Pass it to locker.New (or,
// one per master, to locker.NewRedlock). The Locker does not close c.
func New(c redis.UniversalClient) driver.Driver {
	d := &redisDriver{c: c}
	switch c := c.(type) {
	case *redis.Client:
		d.ctxAware = c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		d.ctxAware = c.Options().ContextTimeoutEnabled
	}
	return d
}

func (d *redisDriver) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", driver.ErrNotSent, err)
	}
	if d.ctxAware || ctx.Done() == nil {
		return d.eval(ctx, s, keys, args)
	}
	// The client would wait for its own ReadTimeout, not for ctx: wait for
	// the reply here and give up when ctx ends. The command itself stays
	// bounded by the client's timeouts.
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := d.eval(ctx, s, keys, args)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (d *redisDriver) eval(ctx context.Context, s *driver.Script, keys driver.Keys, args []any) (any, error) {
	v, err := d.c.EvalSha(ctx, s.Hash(), keys.Names(), args...).Result()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// In a Cluster the script cache is per node: this is the first
		// call on the master that owns keys' slot (or it restarted).
		v, err = d.c.Eval(ctx, s.Source(), keys.Names(), args...).Result()
	}
	switch {
	case err == nil:
		return normalize(v), nil
	case errors.Is(err, redis.Nil):
		return nil, nil
	case errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted):
		return nil, fmt.Errorf("%w: %w (go-redis: %w)", driver.ErrNotSent, driver.ErrPoolExhausted, err)
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return nil, fmt.Errorf("%w: %w", driver.ErrNotSent, err)
	}
	return nil, err
}

// normalize converts go-redis replies to the Driver contract's types. A
// script's reply to a RESP3 connection can carry booleans where RESP2 has
// 1 and nil; they are mapped the RESP2 way.
func normalize(v any) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case bool:
		if x {
			return int64(1)
		}
		return nil
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
		return v // v, not x: boxing x again would allocate
	default:
		return v
	}
}

// Masters returns a driver per master of a Cluster, sorted by address
// (driver.Masters), or just d on a single server or Sentinel set-up. Each
// shares the cluster's connections to its node.
func (d *redisDriver) Masters(ctx context.Context) ([]driver.Driver, error) {
	cc, ok := d.c.(*redis.ClusterClient)
	if !ok {
		return []driver.Driver{d}, nil
	}
	var mu sync.Mutex
	var nodes []*redis.Client
	err := cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		nodes = append(nodes, c)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Options().Addr < nodes[j].Options().Addr })
	out := make([]driver.Driver, len(nodes))
	for i, c := range nodes {
		out[i] = &redisDriver{c: c, ctxAware: d.ctxAware}
	}
	return out, nil
}
