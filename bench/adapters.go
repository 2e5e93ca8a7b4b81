package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	lockgoredis "github.com/locktag/locktag/locker/goredis"
	"github.com/locktag/locktag/locker/redigo"
	lockrueidis "github.com/locktag/locktag/locker/rueidis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// Lock is the one seam every library is measured through: Lock returns once
// the lock named key is held, and unlock releases it.
type Lock interface {
	Lock(ctx context.Context, key string) (unlock func() error, err error)
}

// subject is a library under test. open builds a fresh client for one run
// with c workers on addrs; every client request it sends is added to reqs.
// close releases what open made.
type subject struct {
	name   string
	isLock bool // false for the SET+DEL reference, which excludes nothing
	nodes  int  // servers it needs: 1, 5 for Redlock, or 3 Cluster masters
	open   func(addrs []string, c int, reqs *atomic.Int64) (l Lock, close func(), err error)
}

// lockTTL is the lease every library is given; waits are bounded by the
// run, not by the libraries' own limits.
const lockTTL = 10 * time.Second

// Settings of the peers' retry loops (flags).
var (
	redislockBackoff = 10 * time.Millisecond
	seedSleep        = 5 * time.Millisecond
)

func subjects() []subject {
	return []subject{
		{name: "locktag", isLock: true, nodes: 1, open: openLocktag},
		{name: "locktag-pooled", isLock: true, nodes: 1, open: openLocktagPooled},
		{name: "locktag-1conn", isLock: true, nodes: 1, open: openLocktag1Conn},
		{name: "locktag-goredis", isLock: true, nodes: 1, open: openLocktagGoredis},
		{name: "locktag-rueidis", isLock: true, nodes: 1, open: openLocktagRueidis},
		{name: "redsync", isLock: true, nodes: 1, open: openRedsync},
		{name: "redislock", isLock: true, nodes: 1, open: openRedislock},
		{name: "rueidislock", isLock: true, nodes: 1, open: openRueidislock},
		{name: "seed", isLock: true, nodes: 1, open: openSeed},
		{name: "set+del", isLock: false, nodes: 1, open: openSetDel},
	}
}

// peerNames are the other libraries' single-node locks: a table's "best
// peer" is the best of those that ran.
var peerNames = []string{"redsync", "redislock", "rueidislock", "seed"}

// samePeers pairs locktag on a driver with the peer that runs on the same
// Redis client library, configured alike: the tables compare each pair.
var samePeers = [][2]string{
	{"locktag-goredis", "redislock"},
	{"locktag-rueidis", "rueidislock"},
}

// redlockSubjects are the 5-node Redlock contenders; the Redlock scenario
// runs each on the five masters, with locktag single-node beside them. A new
// Redlock implementation joins every Redlock table by being added here.
func redlockSubjects() []subject {
	return []subject{
		{name: "redsync-redlock5", isLock: true, nodes: 5, open: openRedsync},
		{name: "locktag-redlock5", isLock: true, nodes: 5, open: openLocktag},
	}
}

func subjectByName(name string) (subject, bool) {
	for _, s := range append(subjects(), redlockSubjects()...) {
		if s.name == name {
			return s, true
		}
	}
	return subject{}, false
}

// --- redigo plumbing with request counting ---

// countConn counts every command a client sends (Do, Send), including the
// SUBSCRIBEs of a pub/sub connection.
type countConn struct {
	redis.Conn
	n *atomic.Int64
}

func (c countConn) Do(cmd string, args ...any) (any, error) {
	if cmd != "" {
		c.n.Add(1)
	}
	return c.Conn.Do(cmd, args...)
}

func (c countConn) DoWithTimeout(t time.Duration, cmd string, args ...any) (any, error) {
	if cmd != "" {
		c.n.Add(1)
	}
	return redis.DoWithTimeout(c.Conn, t, cmd, args...)
}

func (c countConn) DoContext(ctx context.Context, cmd string, args ...any) (any, error) {
	if cmd != "" {
		c.n.Add(1)
	}
	return redis.DoContext(c.Conn, ctx, cmd, args...)
}

func (c countConn) Send(cmd string, args ...any) error {
	c.n.Add(1)
	return c.Conn.Send(cmd, args...)
}

func (c countConn) ReceiveWithTimeout(t time.Duration) (any, error) {
	return redis.ReceiveWithTimeout(c.Conn, t)
}

func (c countConn) ReceiveContext(ctx context.Context) (any, error) {
	return redis.ReceiveContext(c.Conn, ctx)
}

func redigoPool(addr string, c int, reqs *atomic.Int64) *redis.Pool {
	return &redis.Pool{
		MaxIdle:     c + 8,
		IdleTimeout: time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			conn, err := redis.DialContext(ctx, "tcp", addr,
				redis.DialConnectTimeout(time.Second),
				redis.DialReadTimeout(10*time.Second),
				redis.DialWriteTimeout(10*time.Second))
			if err != nil {
				return nil, err
			}
			return countConn{Conn: conn, n: reqs}, nil
		},
	}
}

// --- locktag ---

// locktagLock obtains every lock with the same Params.
type locktagLock struct {
	lk *locker.Locker
	p  locker.Params
}

func (l locktagLock) Lock(ctx context.Context, key string) (func() error, error) {
	le, err := l.lk.Obtain(ctx, key, l.p)
	if err != nil {
		return nil, err
	}
	return func() error { return le.Release(ctx) }, nil
}

// openLocktag opens locker.New on one address, or locker.NewRedlock on
// several.
func openLocktag(addrs []string, c int, reqs *atomic.Int64) (Lock, func(), error) {
	return openLocktagWith(addrs, c, reqs)
}

// openLocktagPooled is openLocktag with pooled calls, a pooled connection
// per call (redigo.WithPipelining(0)), instead of the default pipelined
// connection per node.
func openLocktagPooled(addrs []string, c int, reqs *atomic.Int64) (Lock, func(), error) {
	return openLocktagWith(addrs, c, reqs, redigo.WithPipelining(0))
}

// openLocktag1Conn is openLocktag with one pipelined connection
// (redigo.WithPipelining(1)) instead of the default two. It runs only when
// named (see onlyWhenNamed).
func openLocktag1Conn(addrs []string, c int, reqs *atomic.Int64) (Lock, func(), error) {
	return openLocktagWith(addrs, c, reqs, redigo.WithPipelining(1))
}

func openLocktagWith(addrs []string, c int, reqs *atomic.Int64, dopts ...redigo.Option) (Lock, func(), error) {
	var pools []*redis.Pool
	for _, a := range addrs {
		pools = append(pools, redigoPool(a, c, reqs))
	}
	return locktagOn(pools, locker.Params{TTL: lockTTL, Wait: time.Minute}, dopts...)
}

// locktagOn builds a Locker on pools, each through a redigo driver with
// dopts (Redlock when there are several), whose Lock obtains with p;
// closing it closes the pools too.
func locktagOn(pools []*redis.Pool, p locker.Params, dopts ...redigo.Option) (Lock, func(), error) {
	closePools := func() {
		for _, p := range pools {
			p.Close()
		}
	}
	ds := make([]driver.Driver, len(pools))
	for i, pool := range pools {
		ds[i] = redigo.New(pool, dopts...)
	}
	var lk *locker.Locker
	var err error
	if len(ds) == 1 {
		lk, err = locker.New(ds[0])
	} else {
		lk, err = locker.NewRedlock(ds)
	}
	if err != nil {
		closePools()
		return nil, nil, err
	}
	return locktagLock{lk, p}, func() {
		lk.Close()
		closePools()
	}, nil
}

// --- locktag on its other drivers: go-redis and rueidis ---

// openLocktagGoredis is locktag through the go-redis driver
// (locker/goredis) on the go-redis client redislock runs on too
// (goredisClient).
func openLocktagGoredis(addrs []string, c int, reqs *atomic.Int64) (Lock, func(), error) {
	return goredisLocktag(addrs[0], c+8, reqs, locker.Params{TTL: lockTTL, Wait: time.Minute})
}

// goredisClient is the go-redis client of both go-redis subjects,
// locktag-goredis and redislock, so that they compare on the same client:
// the settings docs/scale-out.md recommends, a pool of poolSize, and every
// command counted in reqs.
func goredisClient(addr string, poolSize int, reqs *atomic.Int64) *goredis.Client {
	rc := goredis.NewClient(&goredis.Options{
		Addr:                  addr,
		PoolSize:              poolSize,
		DisableIdentity:       true,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		ReadTimeout:           10 * time.Second,
		WriteTimeout:          10 * time.Second,
	})
	rc.AddHook(countHook{reqs})
	return rc
}

func goredisLocktag(addr string, poolSize int, reqs *atomic.Int64, p locker.Params) (Lock, func(), error) {
	return locktagOnGoredis(goredisClient(addr, poolSize, reqs), p)
}

// locktagOnGoredis is locktag through the go-redis driver on rc, which
// it closes with the Lock.
func locktagOnGoredis(rc goredis.UniversalClient, p locker.Params) (Lock, func(), error) {
	lk, err := locker.New(lockgoredis.New(rc))
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	return locktagLock{lk, p}, func() { lk.Close(); rc.Close() }, nil
}

// openLocktagRueidis is locktag through the rueidis driver
// (locker/rueidis) on a rueidis client with rueidis' defaults:
// auto-pipelining over its own connections.
func openLocktagRueidis(addrs []string, _ int, reqs *atomic.Int64) (Lock, func(), error) {
	return rueidisLocktag(addrs[:1], reqs, locker.Params{TTL: lockTTL, Wait: time.Minute})
}

// rueidisLocktag opens locktag on a rueidis client of initAddrs: a single
// server's client, or a Cluster client when they are Cluster nodes
// (rueidis.NewClient tells which).
func rueidisLocktag(initAddrs []string, reqs *atomic.Int64, p locker.Params) (Lock, func(), error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: initAddrs})
	if err != nil {
		return nil, nil, err
	}
	lk, err := locker.New(lockrueidis.New(countRueidis{rc, reqs}))
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	return locktagLock{lk, p}, func() { lk.Close(); rc.Close() }, nil
}

// countRueidis counts the commands sent through Do and DoMulti (the
// script calls; the subscriber connection's commands go through a
// dedicated client and are not counted).
type countRueidis struct {
	rueidis.Client
	n *atomic.Int64
}

func (c countRueidis) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c countRueidis) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(int64(len(cmds)))
	return c.Client.DoMulti(ctx, cmds...)
}

// --- go-redsync/redsync v4 (redigo driver); Redlock when given 5 addresses ---

type redsyncLock struct{ rs *redsync.Redsync }

func (l redsyncLock) Lock(ctx context.Context, key string) (func() error, error) {
	// Defaults except: the lease, and enough tries that a waiter is limited
	// by the run, not by redsync's 32 tries (its delay stays the default
	// random 50-250ms).
	m := l.rs.NewMutex(key, redsync.WithExpiry(lockTTL), redsync.WithTries(1<<30))
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	// The unlock outlives ctx: a caller whose ctx carries its wait as a
	// deadline (the burst scenario) must still release after that deadline.
	// The pool's read timeout bounds it.
	rctx := context.WithoutCancel(ctx)
	return func() error {
		ok, err := m.UnlockContext(rctx)
		if err == nil && !ok {
			err = errors.New("redsync: unlock refused")
		}
		return err
	}, nil
}

func openRedsync(addrs []string, c int, reqs *atomic.Int64) (Lock, func(), error) {
	var pools []*redis.Pool
	sp := make([]redsyncredis.Pool, 0, len(addrs))
	for _, a := range addrs {
		p := redigoPool(a, c, reqs)
		pools = append(pools, p)
		sp = append(sp, redsyncredigo.NewPool(p))
	}
	rs := redsync.New(sp...)
	return redsyncLock{rs}, func() {
		for _, p := range pools {
			p.Close()
		}
	}, nil
}

// --- bsm/redislock (go-redis v9) with a linear backoff retry ---

type redislockLock struct{ c *redislock.Client }

func (l redislockLock) Lock(ctx context.Context, key string) (func() error, error) {
	lk, err := l.c.Obtain(ctx, key, lockTTL, &redislock.Options{
		RetryStrategy: redislock.LinearBackoff(redislockBackoff),
	})
	if err != nil {
		return nil, err
	}
	rctx := context.WithoutCancel(ctx) // as for redsync; go-redis's read timeout bounds it
	return func() error { return lk.Release(rctx) }, nil
}

type countHook struct{ n *atomic.Int64 }

func (h countHook) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (h countHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}

// ProcessPipelineHook counts a pipeline's commands (locktag-goredis sends
// concurrent calls as pipelines).
func (h countHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

func openRedislock(addrs []string, c int, reqs *atomic.Int64) (Lock, func(), error) {
	rc := goredisClient(addrs[0], c+8, reqs)
	return redislockLock{redislock.New(rc)}, func() { rc.Close() }, nil
}

// --- the seed articles' approach: SET NX PX, 5ms sleep-retry, Lua compare-and-delete ---

var seedUnlock = redis.NewScript(1, `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

type seedLock struct{ pool *redis.Pool }

func (s seedLock) Lock(ctx context.Context, key string) (func() error, error) {
	token := randToken()
	for {
		c := s.pool.Get()
		ok, err := redis.String(c.Do("SET", key, token, "NX", "PX", lockTTL.Milliseconds()))
		c.Close()
		if err == nil && ok == "OK" {
			return func() error {
				c := s.pool.Get()
				defer c.Close()
				n, err := redis.Int(seedUnlock.Do(c, key, token))
				if err == nil && n != 1 {
					err = errors.New("seed: not held")
				}
				return err
			}, nil
		}
		if err != nil && !errors.Is(err, redis.ErrNil) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(seedSleep):
		}
	}
}

func openSeed(addrs []string, c int, reqs *atomic.Int64) (Lock, func(), error) {
	p := redigoPool(addrs[0], c, reqs)
	return seedLock{p}, func() { p.Close() }, nil
}

// --- the reference that is not a lock: one SET and one DEL ---

type setDel struct{ pool *redis.Pool }

func (r setDel) Lock(_ context.Context, key string) (func() error, error) {
	c := r.pool.Get()
	_, err := c.Do("SET", key, "x", "PX", lockTTL.Milliseconds())
	c.Close()
	if err != nil {
		return nil, err
	}
	return func() error {
		c := r.pool.Get()
		defer c.Close()
		_, err := c.Do("DEL", key)
		return err
	}, nil
}

func openSetDel(addrs []string, c int, reqs *atomic.Int64) (Lock, func(), error) {
	p := redigoPool(addrs[0], c, reqs)
	return setDel{p}, func() { p.Close() }, nil
}

func randToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
