package lockertest

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
)

// ClusterReplicaEviction runs ReplicaEviction on a Cluster of 3 masters
// with a replica each, through top.Cluster.
func ClusterReplicaEviction(t *testing.T, top Topology) {
	c := redistest.StartCluster(t, 3, 1)
	masters := c.Masters(t)
	var replicas []*redistest.Server
	for _, n := range c.Nodes {
		if !slices.Contains(masters, n) {
			replicas = append(replicas, n)
		}
	}
	if len(masters) != 3 || len(replicas) != 3 {
		t.Fatalf("%d masters and %d replicas, want 3 of each", len(masters), len(replicas))
	}
	// CLUSTER SLOTS, where the clients find the replicas, leaves out a
	// replica whose replication offset its node knows as 0: one that has
	// replicated nothing yet. A write on each master moves the offsets;
	// every node then learns them from its replicas and by gossip.
	for m, name := range KeysOnEveryMaster(t, c) {
		if _, err := m.Do("SET", "locktag:{"+name+"}:offset", "1"); err != nil {
			t.Fatal(err)
		}
	}
	pollServers(t, 30*time.Second, "every node's CLUSTER SLOTS lists the 3 replicas", func() bool {
		for _, n := range c.Nodes {
			if slotReplicas(n) != 3 {
				return false
			}
		}
		return true
	})
	ReplicaEviction(t, replicas, func(t testing.TB, opts ...locker.Option) *locker.Locker {
		return top.Cluster(t, c, opts...)
	})
}

// SentinelReplicaEviction runs ReplicaEviction on a Sentinel set-up of a
// master with 2 replicas, through top.Sentinel.
func SentinelReplicaEviction(t *testing.T, top Topology) {
	s := redistest.StartSentinel(t, 2)
	if m := s.Master(t); m != s.Data[0] {
		t.Fatalf("master %s, want the one started as master", m.Addr())
	}
	ReplicaEviction(t, s.Data[1:], func(t testing.TB, opts ...locker.Option) *locker.Locker {
		return top.Sentinel(t, s, opts...)
	})
}

// ReplicaEviction checks that Check reads the settings of every replica
// of the deployment behind newLocker's Lockers (replicas: all of them,
// every master's policy noeviction), since a failover may promote any:
//
//   - all noeviction: Check passes, with no risk, and ServerFacts lists
//     every replica after the masters;
//   - one replica with maxmemory 50mb and allkeys-lru (CONFIG SET on it
//     alone): Check and Ping refuse with ErrEvictionPolicy, naming that
//     replica's address and what to set, and no other replica. Without
//     the replica check the masters alone would pass: this is the
//     control that the check reaches the replicas;
//   - with WithEvictionAllowed: Check passes, and the risk naming the
//     replica is logged once over two Checks and listed by Risks;
//   - that replica down: Check passes (it cannot be promoted with the
//     locks' data while down).
func ReplicaEviction(t *testing.T, replicas []*redistest.Server, newLocker func(t testing.TB, opts ...locker.Option) *locker.Locker) {
	t.Helper()
	// within bounds one call: a loaded machine slows the Cluster's pub/sub
	// (the check waits for its messages until its context ends).
	within := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel)
		return ctx
	}

	// The replicas are listed once the deployment has settled: each
	// Locker below has a client of its own, reading the topology anew.
	lk := newLocker(t)
	var addrs []string
	for _, r := range replicas {
		addrs = append(addrs, r.Addr())
	}
	slices.Sort(addrs)
	pollServers(t, 20*time.Second, "ServerFacts lists every replica", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		facts, err := lk.ServerFacts(ctx)
		return err == nil && slices.Equal(replicaAddrs(facts), addrs)
	})
	if err := lk.Check(within()); err != nil {
		t.Fatalf("every server noeviction: Check = %v", err)
	}
	if r := lk.Risks(); len(r) != 0 {
		t.Fatalf("every server noeviction: Risks = %q", r)
	}
	facts, err := lk.ServerFacts(within())
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range facts {
		if f.Replica != (i >= len(facts)-len(replicas)) || !f.Known || f.Policy != "noeviction" {
			t.Fatalf("ServerFacts[%d] = %+v, want the masters, then the replicas, all noeviction: %+v", i, f, facts)
		}
	}

	bad := replicas[len(replicas)-1]
	if _, err := bad.Do("CONFIG", "SET", "maxmemory", "50mb", "maxmemory-policy", "allkeys-lru"); err != nil {
		t.Fatal(err)
	}
	refused := newLocker(t)
	for _, call := range []struct {
		what string
		fn   func(context.Context) error
	}{{"Check", refused.Check}, {"Ping", refused.Ping}} {
		err := call.fn(within())
		if !errors.Is(err, locker.ErrEvictionPolicy) || !errors.Is(err, locker.ErrUnsupported) || errors.Is(err, locker.ErrUnavailable) {
			t.Fatalf("replica %s evicting: %s = %v, want ErrEvictionPolicy and ErrUnsupported only", bad.Addr(), call.what, err)
		}
		for _, want := range []string{"replica " + bad.Addr() + ": maxmemory-policy allkeys-lru", "set maxmemory-policy noeviction", "locker.WithEvictionAllowed"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("%s = %v, want it to say %q", call.what, err, want)
			}
		}
		for _, r := range replicas {
			if r != bad && strings.Contains(err.Error(), r.Addr()) {
				t.Fatalf("%s = %v: names replica %s, which runs noeviction", call.what, err, r.Addr())
			}
		}
	}
	facts, err = refused.ServerFacts(within())
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(facts, func(f locker.ServerFacts) bool { return f.Addr == bad.Addr() }); i < 0 || !facts[i].Replica || !facts[i].Evicting() || facts[i].MaxMemory != 50<<20 {
		t.Fatalf("ServerFacts = %+v, want replica %s evicting with 50 MB", facts, bad.Addr())
	}

	log, rec := logtest.New()
	allowed := newLocker(t, locker.WithEvictionAllowed(), locker.WithLogger(log))
	for range 2 {
		if err := allowed.Check(within()); err != nil {
			t.Fatalf("Check with WithEvictionAllowed: %v", err)
		}
	}
	if r := allowed.Risks(); len(r) != 1 || !strings.Contains(r[0], "replica "+bad.Addr()+": maxmemory-policy allkeys-lru") {
		t.Fatalf("Risks() = %q, want replica %s's policy", r, bad.Addr())
	}
	if n := len(rec.Matching("may break a lock's guarantees")); n != 1 {
		t.Fatalf("the accepted risk was logged %d times, want once:\n%s", n, rec)
	}

	bad.Stop()
	if err := newLocker(t).Check(within()); err != nil {
		t.Fatalf("replica %s down: Check = %v, want it skipped", bad.Addr(), err)
	}
}

// replicaAddrs are the addresses of the replicas in facts.
func replicaAddrs(facts []locker.ServerFacts) []string {
	var out []string
	for _, f := range facts {
		if f.Replica {
			out = append(out, f.Addr)
		}
	}
	slices.Sort(out)
	return out
}

// pollServers polls cond, which asks servers (each time over connections
// of its own), every 50ms until it holds, and fails the test after within.
func pollServers(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond) // polling servers, not synchronising goroutines
	}
}

// slotReplicas counts the replicas srv's CLUSTER SLOTS lists; -1 when
// srv did not answer (a loaded machine: the caller polls again).
func slotReplicas(srv *redistest.Server) int {
	ranges, err := redis.Values(srv.Do("CLUSTER", "SLOTS"))
	if err != nil {
		return -1
	}
	seen := map[string]bool{}
	for _, r := range ranges {
		f, _ := r.([]any)
		for _, n := range f[min(3, len(f)):] {
			node, _ := n.([]any)
			if len(node) > 2 {
				id, _ := node[2].([]byte)
				seen[string(id)] = true
			}
		}
	}
	return len(seen)
}

// WithReplicas returns d listing, as a driver.Replicas, what replicas
// returns on each call: a driver on a real replica (or on an address
// nothing answers), or the error of one the driver cannot reach. Closing
// it closes d.
func WithReplicas(d driver.Driver, replicas func() []driver.Replica) driver.Driver {
	return replicated{d, replicas}
}

type replicated struct {
	driver.Driver
	replicas func() []driver.Replica
}

func (d replicated) Replicas(context.Context) ([]driver.Replica, error) { return d.replicas(), nil }

func (d replicated) Close() error {
	if c, ok := d.Driver.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
