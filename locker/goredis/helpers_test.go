package goredis_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/goredis"
)

// plainClient is a go-redis client for srv, closed when the test ends.
func plainClient(t testing.TB, srv *redistest.Server, mod ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{
		Addr:                  srv.Addr(),
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
	}
	for _, m := range mod {
		m(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// clusterClient is a go-redis cluster client for c, closed when the test
// ends. Each call returns a separate client, as separate processes have.
func clusterClient(t testing.TB, c *redistest.Cluster) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 c.Addrs(),
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
	})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// newLocker is a Locker on rdb through the goredis driver, closed when the
// test ends.
func newLocker(t testing.TB, rdb redis.UniversalClient, opts ...locker.Option) *locker.Locker {
	t.Helper()
	lk, err := locker.New(goredis.New(rdb), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

func mustObtain(t testing.TB, lk *locker.Locker, ctx context.Context, key string, p locker.Params) *locker.Lease {
	t.Helper()
	le, err := lk.Obtain(ctx, key, p)
	if err != nil {
		t.Fatalf("Obtain(%q): %v", key, err)
	}
	return le
}

func mustRelease(t testing.TB, le *locker.Lease) {
	t.Helper()
	if err := le.Release(context.Background()); err != nil {
		t.Fatalf("Release(%q): %v", le.Key(), err)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Within(t, within, what, cond)
}

// queued is the number of waiters queued in Redis for the lock named key
// (default prefix), read through rdb so that a cluster routes it.
func queued(t testing.TB, rdb redis.UniversalClient, key string) int64 {
	t.Helper()
	n, err := rdb.ZCard(context.Background(), "locktag:{"+key+"}:q").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("ZCARD: %v", err)
	}
	return n
}

// waitHandOver has a holder on holderLk and a waiter on waiterLk for key,
// releases once the waiter is queued in Redis (seen through rdb) and
// returns how long the waiter took to wake after the release was sent.
// The holder's lease is long, so a waiter that woke by its safety timer
// (at the lease's end) would take far longer than one by notification.
func waitHandOver(t *testing.T, holderLk, waiterLk *locker.Locker, rdb redis.UniversalClient, key string) time.Duration {
	t.Helper()
	const lease = 30 * time.Second
	ctx := context.Background()
	holder := mustObtain(t, holderLk, ctx, key, locker.Params{TTL: lease})
	type result struct {
		le  *locker.Lease
		err error
		at  time.Time
	}
	got := make(chan result, 1)
	go func() {
		le, err := waiterLk.Obtain(ctx, key, locker.Params{TTL: lease, Wait: 20 * time.Second})
		got <- result{le, err, time.Now()}
	}()
	eventually(t, 10*time.Second, "waiter queued", func() bool { return queued(t, rdb, key) == 1 })
	released := time.Now()
	mustRelease(t, holder)
	var r result
	select {
	case r = <-got:
	case <-time.After(25 * time.Second):
		t.Fatalf("%s: waiter did not wake", key)
	}
	if r.err != nil {
		t.Fatalf("%s: waiter: %v", key, r.err)
	}
	if r.le.Token() <= holder.Token() {
		t.Errorf("%s: waiter's fencing token %d not above holder's %d", key, r.le.Token(), holder.Token())
	}
	mustRelease(t, r.le)
	return r.at.Sub(released)
}

// commandCalls reads calls=N of cmd from INFO commandstats.
func commandCalls(t testing.TB, rdb redis.UniversalClient, cmd string) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// numSub is the number of subscribers of channel on srv.
func numSub(t testing.TB, srv *redistest.Server, channel string) int64 {
	t.Helper()
	v, err := srv.Do("PUBSUB", "NUMSUB", channel)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := v.([]any)
	if len(a) != 2 {
		t.Fatalf("PUBSUB NUMSUB: %v", v)
	}
	n, _ := a[1].(int64)
	return n
}
