package goredis_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/goredis"
)

// The driver's held connections and batches (pipe.go), on a plain client.

// blockedClients is INFO clients' blocked_clients on srv.
func blockedClients(t testing.TB, srv *redistest.Server) string {
	t.Helper()
	v, err := srv.Do("INFO", "clients")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(v.([]byte)), "\n") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), "blocked_clients:"); ok {
			return n
		}
	}
	return ""
}

// A call queued behind busy connections that gives up at its deadline was
// never sent: it wraps ErrNotSent and its script never runs.
func TestQueuedCallGivesUpUnsent(t *testing.T) {
	srv := redistest.Start(t)
	// A pool of 8: the driver holds two of its connections.
	d := goredis.New(plainClient(t, srv, func(o *redis.Options) { o.PoolSize = 8 }))
	ctx := context.Background()
	set := driver.NewScript("return redis.call('SET', KEYS[1], ARGV[1])")
	if _, err := d.Eval(ctx, set, driver.NewKeys("warm"), "1"); err != nil {
		t.Fatal(err)
	}
	// Writes wait while the server is paused: two calls hold both
	// connections meanwhile.
	if _, err := srv.Do("CLIENT", "PAUSE", "1500", "WRITE"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, key := range []string{"held:a", "held:b"} {
		wg.Go(func() {
			c, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_, errs[i] = d.Eval(c, set, driver.NewKeys(key), "1")
		})
	}
	eventually(t, 5*time.Second, "both calls paused", func() bool { return blockedClients(t, srv) == "2" })
	c, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := d.Eval(c, set, driver.NewKeys("queued"), "1")
	if took := time.Since(start); took > time.Second {
		t.Errorf("the queued call returned after %v, its deadline was 150ms", took)
	}
	if !errors.Is(err, driver.ErrNotSent) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("queued call past its deadline: %v, want ErrNotSent and DeadlineExceeded", err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("paused call %d: %v", i, err)
		}
	}
	if n, err := srv.Do("EXISTS", "held:a", "held:b", "queued"); err != nil || n.(int64) != 2 {
		t.Fatalf("EXISTS of the two paused keys and the queued one: %v, %v; want 2", n, err)
	}
}

// Many concurrent calls on two held connections are batched: each gets
// its own reply, and the server saw fewer client reads than commands.
func TestBatchedReplies(t *testing.T) {
	srv := redistest.Start(t)
	rdb := plainClient(t, srv)
	d := goredis.New(rdb)
	ctx := context.Background()
	incr := driver.NewScript("return redis.call('INCR', KEYS[1])")
	if _, err := d.Eval(ctx, incr, driver.NewKeys("n")); err != nil {
		t.Fatal(err)
	}
	// Queue calls behind two paused ones, so that they go as batches.
	if _, err := srv.Do("CLIENT", "PAUSE", "300", "WRITE"); err != nil {
		t.Fatal(err)
	}
	const n = 64
	var wg sync.WaitGroup
	got := make([]int64, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			v, err := d.Eval(ctx, incr, driver.NewKeys("n"))
			got[i], _ = v.(int64)
			errs[i] = err
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if got[i] < 2 || got[i] > n+1 || seen[got[i]] {
			t.Fatalf("replies mixed up: %v", got)
		}
		seen[got[i]] = true
	}
	if conns := rdb.PoolStats().TotalConns; conns > 3 {
		t.Errorf("%d connections for 64 concurrent calls, want at most 3 (the client's first and two held)", conns)
	}
}

// Held connections go back to the pool when the driver is closed, and by
// themselves once idle.
func TestHeldConnectionsReturned(t *testing.T) {
	srv := redistest.Start(t)
	rdb := plainClient(t, srv)
	ctx := context.Background()
	sc := driver.NewScript("return 1")
	inUse := func() int {
		st := rdb.PoolStats()
		return int(st.TotalConns) - int(st.IdleConns)
	}
	for _, close := range []bool{true, false} {
		d := goredis.New(rdb)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 20 {
					if _, err := d.Eval(ctx, sc, driver.Keys{}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if close {
			if n := inUse(); n == 0 {
				t.Fatal("no connection held after the calls")
			}
			_ = d.(interface{ Close() error }).Close()
			if n := inUse(); n != 0 {
				t.Fatalf("%d connections in use after Close", n)
			}
			// Calls after Close go through the client.
			if _, err := d.Eval(ctx, sc, driver.Keys{}); err != nil {
				t.Fatal(err)
			}
		} else {
			eventually(t, 10*time.Second, "idle held connections back in the pool", func() bool { return inUse() == 0 })
		}
	}
}

// A call whose held connection was closed underneath (as a Sentinel
// failover closes the old master's) could not be written and is sent
// again on another connection, without an error.
func TestHeldConnectionClosedUnderneath(t *testing.T) {
	srv := redistest.Start(t)
	var mu sync.Mutex
	var conns []net.Conn
	rdb := plainClient(t, srv, func(o *redis.Options) {
		o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			var nd net.Dialer
			c, err := nd.DialContext(ctx, network, addr)
			if err == nil {
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
			return c, err
		}
	})
	d := goredis.New(rdb)
	ctx := context.Background()
	sc := driver.NewScript("return 1")
	for range 3 {
		if _, err := d.Eval(ctx, sc, driver.Keys{}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	for _, c := range conns {
		_ = c.Close()
	}
	mu.Unlock()
	if _, err := d.Eval(ctx, sc, driver.Keys{}); err != nil {
		t.Fatalf("a call on a connection closed underneath: %v", err)
	}
}
