package lockertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
)

// Cluster runs, as subtests, what every driver with Cluster support must
// do on a local 3-master Redis Cluster c (redistest.StartCluster(t, 3, 0))
// through its Cluster client (top.Cluster), with keys a lock name on each
// master (KeysOnEveryMaster): each lock on its slot's master, hand-over
// notices that reach every node and wake waiters across nodes, mutual
// exclusion with its control, List over every master, multi-key locks
// across slots, and rate keys on their name's master.
func Cluster(t *testing.T, top Topology, c *redistest.Cluster, keys map[*redistest.Server]string) {
	t.Run("KeysOnEveryMaster", func(t *testing.T) { testClusterKeys(t, top, c, keys) })
	t.Run("ScriptPublishReachesEveryNode", func(t *testing.T) { testClusterPublish(t, top, c, keys) })
	t.Run("WaitAcrossNodes", func(t *testing.T) { testClusterWait(t, top, c, keys) })
	t.Run("MutualExclusion", func(t *testing.T) { testClusterMutex(t, top, c, keys) })
	t.Run("ListEveryMaster", func(t *testing.T) { testClusterList(t, top, c, keys) })
	t.Run("MultiKeyAcrossSlots", func(t *testing.T) { testClusterMulti(t, top, c, keys) })
	t.Run("RateLimit", func(t *testing.T) { testClusterRate(t, top, c, keys) })
}

// mustRelease releases le, failing the test on an error.
func mustRelease(t testing.TB, le *locker.Lease) {
	t.Helper()
	if err := le.Release(context.Background()); err != nil {
		t.Fatalf("Release(%q): %v", le.Key(), err)
	}
}

// queueLen reads the length of a lock's waiter queue where it lives.
type queueLen func(key string) int64

// queueOn reads key's waiter queue on the server master returns.
func queueOn(t testing.TB, master func(key string) *redistest.Server) queueLen {
	return func(key string) int64 {
		t.Helper()
		q := "locktag:{" + key + "}:q"
		n, err := redigo.Int64(master(q).Do("ZCARD", q))
		if err != nil {
			t.Fatalf("ZCARD: %v", err)
		}
		return n
	}
}

// clusterQueued reads waiter queues on c, on the master of each one's slot.
func clusterQueued(t testing.TB, c *redistest.Cluster) queueLen {
	return queueOn(t, func(q string) *redistest.Server { return c.MasterOf(t, c.KeySlot(t, q)) })
}

// numSub is PUBSUB NUMSUB channel on srv.
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

// waitHandOver has a holder on holderLk and a waiter on waiterLk for key,
// releases once the waiter is queued (queued) and returns how long the waiter
// took to wake after the release was sent. The holder's lease is long, so
// a waiter that woke by its safety timer (at the lease's end) would take
// far longer than one by notification.
func waitHandOver(t *testing.T, holderLk, waiterLk *locker.Locker, queued queueLen, key string) time.Duration {
	t.Helper()
	const lease = 30 * time.Second
	ctx := context.Background()
	holder := MustObtain(t, holderLk, ctx, key, locker.Params{TTL: lease})
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
	testwait.Within(t, 10*time.Second, "waiter queued", func() bool { return queued(key) == 1 })
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

// A rate key lives on the master of its name's slot, and the limit holds
// there: a burst of 3 admits 3 of 5, on every master.
func testClusterRate(t *testing.T, top Topology, c *redistest.Cluster, keys map[*redistest.Server]string) {
	lk := top.Cluster(t, c)
	p := locker.RateParams{Limit: 3, Period: time.Hour}
	for m, key := range keys {
		if c.KeySlot(t, "locktag:{"+key+"}:rate") != c.KeySlot(t, "locktag:{"+key+"}") {
			t.Fatalf("%s: the rate key is not in the name's slot", key)
		}
		admitted := 0
		for range 5 {
			if _, err := lk.Allow(context.Background(), key, p); err == nil {
				admitted++
			} else if !errors.Is(err, locker.ErrRateLimited) {
				t.Fatalf("%s: %v", key, err)
			}
		}
		if admitted != 3 {
			t.Errorf("%s: admitted %d of 5, want 3", key, admitted)
		}
		if n, err := redigo.Int(m.Do("EXISTS", "locktag:{"+key+"}:rate")); err != nil || n != 1 {
			t.Errorf("%s: rate key not on its slot's master %s: %v %v", key, m.Addr(), n, err)
		}
	}
}

// List visits every master: it finds a lock held on each.
func testClusterList(t *testing.T, top Topology, c *redistest.Cluster, keys map[*redistest.Server]string) {
	lk := top.Cluster(t, c)
	ctx := context.Background()
	var want []string
	for _, name := range keys {
		le := MustObtain(t, lk, ctx, "list-"+name, locker.Params{})
		t.Cleanup(func() { mustRelease(t, le) })
		want = append(want, "list-"+name)
	}
	sort.Strings(want)
	seen := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("List does not end")
		}
		names, next, err := lk.List(ctx, "list-", cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			seen[n] = true
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	var got []string
	for n := range seen {
		got = append(got, n)
	}
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("List on the cluster = %v, want %v (one per master)", got, want)
	}
}

// Every lock lives on the master of its slot (its fencing token in its
// value).
func testClusterKeys(t *testing.T, top Topology, c *redistest.Cluster, keys map[*redistest.Server]string) {
	lk := top.Cluster(t, c)
	ctx := context.Background()
	for m, key := range keys {
		le := MustObtain(t, lk, ctx, key, locker.Params{})
		if n, err := redigo.Int(m.Do("EXISTS", "locktag:{"+key+"}")); err != nil || n != 1 {
			t.Errorf("%s not on its slot's master %s: %v %v", key, m.Addr(), n, err)
		}
		if _, err := lk.Obtain(ctx, key, locker.Params{}); err == nil {
			t.Errorf("%s obtained twice", key)
		}
		inner := MustObtain(t, lk, le.Context(), key, locker.Params{})
		mustRelease(t, inner)
		mustRelease(t, le)
		if n, _ := redigo.Int(m.Do("EXISTS", "locktag:{"+key+"}")); n != 0 {
			t.Errorf("%s still there after release", key)
		}
	}
}

// A PUBLISH made by a Lua script on one master reaches a subscriber on
// every node: classic pub/sub is broadcast over the cluster bus, so the
// locker's one subscriber connection may live on any node.
func testClusterPublish(t *testing.T, top Topology, c *redistest.Cluster, keys map[*redistest.Server]string) {
	holderLk, waiterLk := top.Cluster(t, c), top.Cluster(t, c)
	for _, key := range keys {
		channel := "locktag:{" + key + "}:c"
		subs := make([]chan string, len(c.Nodes))
		for i, n := range c.Nodes {
			subs[i] = subscribeRaw(t, n, channel)
		}
		waitHandOver(t, holderLk, waiterLk, clusterQueued(t, c), key)
		for i, n := range c.Nodes {
			select {
			case msg := <-subs[i]:
				if f := strings.Fields(msg); len(f) != 4 {
					t.Errorf("%s on %s: hand-over %q is not \"token fence ms pttl\"", channel, n.Addr(), msg)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("%s: no hand-over message on node %s", channel, n.Addr())
			}
		}
	}
}

// subscribeRaw subscribes a plain connection to channel on node s and
// returns the payloads it receives.
func subscribeRaw(t *testing.T, s *redistest.Server, channel string) chan string {
	t.Helper()
	conn, err := redigo.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	psc := redigo.PubSubConn{Conn: conn}
	if err := psc.Subscribe(channel); err != nil {
		t.Fatal(err)
	}
	if m, ok := psc.Receive().(redigo.Subscription); !ok || m.Kind != "subscribe" {
		t.Fatalf("SUBSCRIBE on %s: %v", s.Addr(), m)
	}
	out := make(chan string, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			switch m := psc.Receive().(type) {
			case redigo.Message:
				out <- string(m.Data)
			case error:
				return
			}
		}
	}()
	t.Cleanup(func() { _ = conn.Close(); <-done })
	return out
}

// A waiter on one client wakes by notification when a holder on another
// client releases, for locks on every master. The waiter's Locker listens
// through one connection on one node, so at least two of the three
// hand-overs cross nodes.
func testClusterWait(t *testing.T, top Topology, c *redistest.Cluster, keys map[*redistest.Server]string) {
	holderLk := top.Cluster(t, c)
	waiterLk := top.Cluster(t, c, locker.WithUnsubscribeDelay(time.Minute)) // channels stay subscribed
	for _, key := range keys {
		took := waitHandOver(t, holderLk, waiterLk, clusterQueued(t, c), key)
		// By its safety timer the waiter would wake after the holder's
		// 30s lease.
		if took > 5*time.Second {
			t.Errorf("%s: waiter woke %v after the release: not by notification", key, took)
		}
	}
	crossed := 0
	for m, key := range keys {
		var on []string
		for _, n := range c.Nodes {
			if numSub(t, n, "locktag:{"+key+"}:c") > 0 {
				on = append(on, n.Addr())
			}
		}
		if len(on) != 1 {
			t.Fatalf("%s: subscribed on nodes %v, want one", key, on)
		}
		if on[0] != m.Addr() {
			crossed++
		}
	}
	if crossed < 2 {
		t.Errorf("%d hand-overs crossed nodes, want at least 2", crossed)
	}
}

// Several lockers (processes) on separate cluster clients contend for a
// lock on every master; an overlap detector counts holders per key and a
// lost-update counter checks the work. The control run gives each locker
// its own key prefix, so the "locks" do not exclude each other, and shows
// that the detector sees the overlaps.
func testClusterMutex(t *testing.T, top Topology, c *redistest.Cluster, keys map[*redistest.Server]string) {
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		names = append(names, k)
	}
	run := func(t *testing.T, prefix func(i int) string) (overlaps, lost int64) {
		const lockers, workers, rounds = 3, 3, 15
		type state struct{ holders, count atomic.Int64 }
		st := make(map[string]*state)
		for _, k := range names {
			st[k] = &state{}
		}
		var maxOver atomic.Int64
		var wg sync.WaitGroup
		for i := range lockers {
			lk := top.Cluster(t, c, locker.WithKeyPrefix(prefix(i)))
			for w := range workers {
				wg.Go(func() {
					for r := range rounds {
						key := names[(w+r)%len(names)]
						s := st[key]
						le, err := lk.Obtain(context.Background(), key, locker.Params{TTL: 20 * time.Second, Wait: 20 * time.Second})
						if err != nil {
							t.Errorf("Obtain(%s): %v", key, err)
							return
						}
						if h := s.holders.Add(1); h > 1 {
							maxOver.Add(1)
						}
						// Read, yield, write: a lost update when two hold.
						n := s.count.Load()
						time.Sleep(time.Millisecond) // work under the lock, not synchronisation
						s.count.Store(n + 1)
						s.holders.Add(-1)
						if err := le.Release(context.Background()); err != nil {
							t.Errorf("Release(%s): %v", key, err)
						}
					}
				})
			}
		}
		wg.Wait()
		var total int64
		for _, s := range st {
			total += s.count.Load()
		}
		return maxOver.Load(), lockers*workers*rounds - total
	}

	t.Run("Locks", func(t *testing.T) {
		overlaps, lost := run(t, func(int) string { return "locktag:" })
		if overlaps != 0 || lost != 0 {
			t.Fatalf("%d overlapping holders, %d lost updates", overlaps, lost)
		}
	})
	t.Run("Control", func(t *testing.T) {
		overlaps, lost := run(t, func(i int) string { return fmt.Sprintf("control%d:", i) })
		if overlaps == 0 {
			t.Fatalf("the detector saw no overlap between lockers that do not exclude each other (%d lost updates)", lost)
		}
		t.Logf("control: %d overlaps, %d lost updates", overlaps, lost)
	})
}

// testClusterMulti: a multi-key lock whose keys live on every master (one
// slot each) holds all of them, rolls back what it took when a later key
// stays busy, and does not deadlock against itself in opposite orders.
func testClusterMulti(t *testing.T, top Topology, c *redistest.Cluster, byMaster map[*redistest.Server]string) {
	lk := top.Cluster(t, c)
	other := top.Cluster(t, c)
	ctx := context.Background()
	var keys []string
	for _, name := range byMaster {
		keys = append(keys, "multi-"+name)
	}
	slices.Sort(keys)

	le, err := lk.ObtainMany(ctx, keys, locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, err := other.Obtain(ctx, k, locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
			t.Fatalf("%s obtained while multi-held: %v", k, err)
		}
	}
	mustRelease(t, le)

	// The last key in the global order busy: the first two were taken,
	// then given back.
	busy := MustObtain(t, other, ctx, keys[2], locker.Params{})
	if _, err := lk.ObtainMany(ctx, []string{keys[2], keys[0], keys[1]}, locker.Params{Wait: 100 * time.Millisecond}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("ObtainMany with a busy key: %v", err)
	}
	for _, k := range keys[:2] {
		le := MustObtain(t, other, ctx, k, locker.Params{})
		mustRelease(t, le)
	}
	mustRelease(t, busy)

	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		order := slices.Clone(keys)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		l := []*locker.Locker{lk, other}[i%2]
		wg.Go(func() {
			for range 5 {
				le, err := l.ObtainMany(ctx, order, locker.Params{Wait: time.Minute})
				if err != nil {
					errs <- err
					return
				}
				if err := le.Release(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
