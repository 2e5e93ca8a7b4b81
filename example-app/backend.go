package main

import (
	"context"
	"crypto/fips140"
	"crypto/tls"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"
	goredislib "github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/goredis"
	"github.com/locktag/locktag/locker/redigo"
)

// backend is the Redis the app locks on, and how to let go of it.
type backend struct {
	lk *locker.Locker
	// records keeps the idempotency records: lk itself, except on Redlock,
	// which keeps none (locker.ErrIdempotencyUnsupported) — there the app
	// chooses, openly, a single-node Locker on the first master.
	records *locker.Locker
	desc    string // one line for the start-up banner
	dev     bool   // the embedded miniredis
	close   func()
}

// Close closes the locker and then the connections or embedded server.
func (b *backend) Close() {
	_ = b.lk.Close()
	b.close()
}

// openBackend builds the Locker from the environment:
//
//	REDIS_CLUSTER=a:7000,b:7001,...  Redis Cluster (go-redis, locker/goredis)
//	REDIS_SENTINEL=a:26379,...       Sentinel; REDIS_MASTER names the master (default "mymaster")
//	REDIS_REDLOCK=a:6379,b:6379,...  Redlock over independent masters (locker.NewRedlock)
//	REDIS_ADDR=host:6379             one Redis (locker.New)
//	(none of them)                   an embedded miniredis, for development only
//
// REDIS_PASSWORD and REDIS_TLS=1 apply to every real Redis. It pings every
// node so that a wrong address fails at start-up, not at the first request.
func openBackend(ctx context.Context, getenv func(string) string, opts ...locker.Option) (*backend, error) {
	password := getenv("REDIS_PASSWORD")
	useTLS := getenv("REDIS_TLS") == "1"
	switch {
	case getenv("REDIS_CLUSTER") != "" || getenv("REDIS_SENTINEL") != "":
		return openGoRedis(ctx, getenv, password, useTLS, opts)
	case getenv("REDIS_REDLOCK") != "":
		addrs := splitAddrs(getenv("REDIS_REDLOCK"))
		pools := make([]*redis.Pool, len(addrs))
		for i, a := range addrs {
			pools[i] = newPool(a, password, useTLS)
		}
		if err := pingPools(ctx, pools); err != nil {
			closePools(pools)
			return nil, err
		}
		ds := make([]driver.Driver, len(pools))
		for i, p := range pools {
			ds[i] = redigo.New(p)
		}
		lk, err := locker.NewRedlock(ds, opts...)
		if err != nil {
			closePools(pools)
			return nil, err
		}
		records, err := locker.New(ds[0], opts...)
		if err != nil {
			_ = lk.Close()
			closePools(pools)
			return nil, err
		}
		return &backend{
			lk:      lk,
			records: records,
			desc: fmt.Sprintf("Redlock over %d masters %s; idempotency records on %s alone (Redlock keeps none)",
				len(addrs), strings.Join(addrs, ", "), addrs[0]),
			close: func() { _ = records.Close(); closePools(pools) },
		}, nil
	case getenv("REDIS_ADDR") != "":
		addr := getenv("REDIS_ADDR")
		pool := newPool(addr, password, useTLS)
		if err := pingPools(ctx, []*redis.Pool{pool}); err != nil {
			_ = pool.Close()
			return nil, err
		}
		lk, err := locker.New(redigo.New(pool), opts...)
		if err != nil {
			_ = pool.Close()
			return nil, err
		}
		return &backend{
			lk:    lk,
			desc:  "Redis at " + addr,
			close: func() { _ = pool.Close() },
		}, nil
	}
	return openEmbedded(opts)
}

// newPool returns a redigo pool with bounded dial, read and write times. The
// locker dials its one subscriber connection with the same Dial.
func newPool(addr, password string, useTLS bool) *redis.Pool {
	dialOpts := []redis.DialOption{
		redis.DialConnectTimeout(2 * time.Second),
		redis.DialReadTimeout(3 * time.Second),
		redis.DialWriteTimeout(3 * time.Second),
	}
	if password != "" {
		dialOpts = append(dialOpts, redis.DialPassword(password))
	}
	if useTLS {
		dialOpts = append(dialOpts, redis.DialUseTLS(true))
	}
	// The locker's redigo driver pipelines its calls over two connections it
	// dials with this pool (and one for notifications); MaxIdle serves the
	// start-up pings here, and the calls with redigo.WithPipelining(0).
	return &redis.Pool{
		MaxIdle:     64,
		IdleTimeout: time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr, dialOpts...)
		},
	}
}

func pingPools(ctx context.Context, pools []*redis.Pool) error {
	for _, p := range pools {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		c, err := p.GetContext(ctx)
		if err == nil {
			_, err = c.Do("PING")
			_ = c.Close()
		}
		cancel()
		if err != nil {
			return fmt.Errorf("redis: %w", err)
		}
	}
	return nil
}

func closePools(pools []*redis.Pool) {
	for _, p := range pools {
		_ = p.Close()
	}
}

// openGoRedis builds a Locker on a Cluster or Sentinel through go-redis.
func openGoRedis(ctx context.Context, getenv func(string) string, password string, useTLS bool, opts []locker.Option) (*backend, error) {
	uo := &goredislib.UniversalOptions{
		Password:              password,
		ContextTimeoutEnabled: true, // ctx deadlines reach the socket
		MaxRetries:            -1,   // failures go to the locker, which cleans up by token
		DialTimeout:           2 * time.Second,
		ReadTimeout:           3 * time.Second,
		WriteTimeout:          3 * time.Second,
	}
	if useTLS {
		uo.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	var desc string
	if s := getenv("REDIS_CLUSTER"); s != "" {
		uo.Addrs = splitAddrs(s)
		uo.IsClusterMode = true
		desc = "Redis Cluster via " + strings.Join(uo.Addrs, ", ")
	} else {
		uo.Addrs = splitAddrs(getenv("REDIS_SENTINEL"))
		uo.MasterName = getenv("REDIS_MASTER")
		if uo.MasterName == "" {
			uo.MasterName = "mymaster"
		}
		desc = fmt.Sprintf("Redis Sentinel master %q via %s", uo.MasterName, strings.Join(uo.Addrs, ", "))
	}
	rdb := goredislib.NewUniversalClient(uo)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redis: %w", err)
	}
	lk, err := locker.New(goredis.New(rdb), opts...)
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	return &backend{
		lk:    lk,
		desc:  desc,
		close: func() { _ = rdb.Close() },
	}, nil
}

func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// openEmbedded starts a miniredis on a free loopback port. miniredis keeps
// key expiries as durations that only move when told, so a ticker advances
// them in real time: leases and idempotency records really expire.
func openEmbedded(opts []locker.Option) (*backend, error) {
	m := miniredis.NewMiniRedis()
	// The embedded server's SHA-1 script names are the server's, not the
	// app's: its goroutines run outside FIPS 140-only enforcement.
	var err error
	fips140.WithoutEnforcement(func() { err = m.Start() })
	if err != nil {
		return nil, fmt.Errorf("embedded redis: %w", err)
	}
	stopClock := runClock(m, 10*time.Millisecond)
	pool := newPool(m.Addr(), "", false)
	lk, err := locker.New(redigo.New(pool), opts...)
	if err != nil {
		_ = pool.Close()
		stopClock()
		m.Close()
		return nil, err
	}
	return &backend{
		lk:   lk,
		desc: "embedded miniredis at " + m.Addr() + " (DEV ONLY: in memory, one process; set REDIS_ADDR for a real Redis)",
		dev:  true,
		close: func() {
			_ = pool.Close()
			stopClock()
			m.Close()
		},
	}, nil
}

// runClock advances m's expiry clock by the real time passed, every tick,
// until the returned stop function is called (stop waits for the goroutine).
func runClock(m *miniredis.Miniredis, tick time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				m.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}
