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
	// p runs the calls of a *redis.Client on connections held out of its
	// pool, pipelining concurrent ones (pipe.go); nil: every call is one
	// command through the client (a Cluster, a small pool, a Ring).
	p *pipe
}

// New returns a [driver.Driver] on c: a [redis.Client] (also one made by
// [redis.NewFailoverClient] for Sentinel), a [redis.ClusterClient], or
// whatever [redis.NewUniversalClient] returns. Pass it to locker.New (or,
// one per master, to locker.NewRedlock). The Locker does not close c; its
// Close returns the connections the driver holds to c's pool.
func New(c redis.UniversalClient) driver.Driver {
	d := &redisDriver{c: c}
	switch c := c.(type) {
	case *redis.Client:
		o := c.Options()
		d.ctxAware = o.ContextTimeoutEnabled
		if n := heldConns(o.PoolSize); n > 0 {
			d.p = newPipe(c, n)
		}
	case *redis.ClusterClient:
		d.ctxAware = c.Options().ContextTimeoutEnabled
	}
	return d
}

func (d *redisDriver) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, driver.NotSent(err)
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

// eval runs s by EVALSHA and, on NOSCRIPT, by EVAL. A call the client
// could not write on a held connection (closed underneath, by a Sentinel
// failover for one) reached nobody and is tried once more.
func (d *redisDriver) eval(ctx context.Context, s *driver.Script, keys driver.Keys, args []any) (any, error) {
	c := getCall()
	byHash, retried := true, false
	for {
		ok, err := d.run(ctx, c, s, keys, args, byHash)
		if !ok {
			// Abandoned to a batch still under way: c is its no more.
			return nil, err
		}
		if err == nil {
			err = c.cmd.Err()
		}
		switch {
		case err == nil:
			v := driver.NormalizeReply(c.cmd.Val())
			putCall(c)
			return v, nil
		case byHash && redis.HasErrorPrefix(err, "NOSCRIPT"):
			// In a Cluster the script cache is per node: this is the first
			// call on the master that owns keys' slot (or it restarted).
			byHash = false
			continue
		case d.p != nil && !retried && unwritten(err) && ctx.Err() == nil:
			retried = true
			continue
		}
		putCall(c)
		return nil, callError(err)
	}
}

// run sends one script call made in c, through the held connections or as
// one command of the client. ok is false when c went to a batch its caller
// no longer waits for (c must then not be reused); err, when not nil, is
// the call's error in place of the command's.
func (d *redisDriver) run(ctx context.Context, c *call, s *driver.Script, keys driver.Keys, args []any, byHash bool) (ok bool, err error) {
	c.prepare(ctx, s, keys, args, byHash, d.p != nil)
	if d.p != nil {
		return d.p.do(ctx, c)
	}
	_ = d.c.Process(ctx, c.cmd)
	return true, nil
}

// callError maps a failed call's error to the Driver contract: a call
// that never reached Redis wraps driver.ErrNotSent; a nil reply is no
// error (the caller checks redis.Nil first).
func callError(err error) error {
	switch {
	case errors.Is(err, redis.Nil):
		return nil
	case errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted):
		return fmt.Errorf("%w: %w (go-redis: %w)", driver.ErrNotSent, driver.ErrPoolExhausted, err)
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return driver.NotSent(err)
	}
	return err
}

// unwritten reports whether err says the client could not write the call:
// its write failed, or it found its connection closed by the client
// itself (a Sentinel failover closes the old master's connections, the
// held ones too) when setting the socket's deadline. Nothing reached
// Redis then, so trying again is safe. (A connection closed between the
// write and the read's deadline fails the same way; on a failover the old
// master, a replica by then, refuses the script's writes.)
func unwritten(err error) bool {
	var oe *net.OpError
	if !errors.As(err, &oe) {
		return false
	}
	return oe.Op == "write" || oe.Op == "set" && errors.Is(err, net.ErrClosed)
}

// Close returns the connections the driver holds to the client's pool
// (the Locker's Close calls it); the client stays open, and calls after
// Close go through it one command at a time.
func (d *redisDriver) Close() error {
	if d.p != nil {
		d.p.close()
	}
	return nil
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
		// One command per call through the node's client: these drivers
		// are made per use and never closed, so they hold no connection.
		out[i] = &redisDriver{c: c, ctxAware: d.ctxAware}
	}
	return out, nil
}
