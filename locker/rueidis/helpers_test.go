package rueidis_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	lockrueidis "github.com/locktag/locktag/locker/rueidis"
)

// newClient is a rueidis client made with o, closed when the test ends.
func newClient(t testing.TB, o rueidis.ClientOption) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// plainClient is a rueidis client for srv with rueidis' defaults, closed
// when the test ends; mod changes the options first.
func plainClient(t testing.TB, srv *redistest.Server, mod ...func(*rueidis.ClientOption)) rueidis.Client {
	t.Helper()
	o := rueidis.ClientOption{InitAddress: []string{srv.Addr()}}
	for _, m := range mod {
		m(&o)
	}
	return newClient(t, o)
}

// clusterClient is a rueidis cluster client for c, closed when the test
// ends. Each call returns a separate client, as separate processes have.
func clusterClient(t testing.TB, c *redistest.Cluster, mod ...func(*rueidis.ClientOption)) rueidis.Client {
	t.Helper()
	o := rueidis.ClientOption{InitAddress: c.Addrs()}
	for _, m := range mod {
		m(&o)
	}
	cc := newClient(t, o)
	if cc.Mode() != rueidis.ClientModeCluster {
		t.Fatalf("client mode %s, want cluster", cc.Mode())
	}
	return cc
}

// newLocker is a Locker on c through the rueidis driver, closed when the
// test ends.
func newLocker(t testing.TB, c rueidis.Client, opts ...locker.Option) *locker.Locker {
	t.Helper()
	lk, err := locker.New(lockrueidis.New(c), opts...)
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
// (default prefix), read through c so that a cluster routes it.
func queued(t testing.TB, c rueidis.Client, key string) int64 {
	t.Helper()
	n, err := c.Do(context.Background(), c.B().Zcard().Key("locktag:{"+key+"}:q").Build()).AsInt64()
	if err != nil && !rueidis.IsRedisNil(err) {
		t.Fatalf("ZCARD: %v", err)
	}
	return n
}

// waitHandOver has a holder on holderLk and a waiter on waiterLk for key,
// releases once the waiter is queued in Redis (seen through c) and
// returns how long the waiter took to wake after the release was sent.
// The holder's lease is long, so a waiter that woke by its safety timer
// (at the lease's end) would take far longer than one by notification.
func waitHandOver(t *testing.T, holderLk, waiterLk *locker.Locker, c rueidis.Client, key string) time.Duration {
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
	eventually(t, 10*time.Second, "waiter queued", func() bool { return queued(t, c, key) == 1 })
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

// commandCalls reads calls=N of cmd from INFO commandstats on srv.
func commandCalls(t testing.TB, srv *redistest.Server, cmd string) int {
	t.Helper()
	v, err := srv.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := v.([]byte)
	for _, line := range strings.Split(string(info), "\n") {
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
