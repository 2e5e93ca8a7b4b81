package lockertest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
)

// Topology is how a driver's tests make Lockers on the local Sentinel and
// Cluster set-ups of internal/redistest, for the suites that every driver
// with Sentinel and Cluster support runs (FailoverReplicaAck,
// ClusterReplicaAck).
type Topology struct {
	// Sentinel returns a Locker through the driver's Sentinel (failover)
	// client of s, closed at the test's end.
	Sentinel func(t testing.TB, s *redistest.Sentinels, opts ...locker.Option) *locker.Locker
	// Cluster returns a Locker through the driver's Cluster client of c,
	// closed at the test's end.
	Cluster func(t testing.TB, c *redistest.Cluster, opts ...locker.Option) *locker.Locker
	// ClusterDriver returns the driver on the driver's Cluster client of
	// c alone, without a Locker, closed at the test's end.
	ClusterDriver func(t testing.TB, c *redistest.Cluster) driver.Driver
}

// KeysOnEveryMaster returns a lock name for each master of c's 3: one
// whose lock, queue and channel keys are in a slot of that master.
func KeysOnEveryMaster(t *testing.T, c *redistest.Cluster) map[*redistest.Server]string {
	t.Helper()
	masters := c.Masters(t)
	if len(masters) != 3 {
		t.Fatalf("%d masters, want 3", len(masters))
	}
	keys := make(map[*redistest.Server]string)
	for i := 0; len(keys) < len(masters); i++ {
		if i > 1000 {
			t.Fatalf("no key for every master after 1000 tries: %v", keys)
		}
		name := "order:" + strconv.Itoa(i)
		slot := c.KeySlot(t, "locktag:{"+name+"}")
		if slot != c.KeySlot(t, "locktag:{"+name+"}:c") || slot != c.KeySlot(t, "locktag:{"+name+"}:q") {
			t.Fatalf("%s: lock, queue and channel in different slots", name)
		}
		m := c.MasterOf(t, slot)
		if _, ok := keys[m]; !ok {
			keys[m] = name
		}
	}
	return keys
}

// failoverTrials is how many failovers TestFailoverReplicaAck runs; each
// takes about three seconds (a Sentinel set-up, a replication gap, the
// sentinels' failover).
const failoverTrials = 4

// gapKeys is how many locks each kind of holder takes in a trial's
// replication gap.
const gapKeys = 3

// trialResult is what one failover did to the holders' locks.
type trialResult struct {
	controlDouble int           // locks the new master granted again while their control holder still held them
	ackDouble     int           // the same for holders with WithReplicaAck
	ackRefused    int           // acquisitions in the gap WithReplicaAck refused (ErrNotReplicated, or the master died during WAIT)
	ackSurvived   int           // locks acknowledged before the gap that the new master still had
	overlap       time.Duration // how long a control holder went on after the second grant, until its lease reported lost (first trial only)
	promoted      time.Duration // from the kill until the sentinels named the new master
}

// FailoverReplicaAck runs, on a real Sentinel set-up (master, replica, three
// sentinels, the driver's Sentinel client from top),
// failoverTrials trials of "take locks, then the master dies before
// replication reaches the replica". Each trial makes the gap the same
// way: the replica is frozen (SIGSTOP) and the master drops its link
// (CLIENT KILL TYPE replica), so writes from then on sit in the master's
// backlog and nowhere else (a frozen replica alone does not do: the
// kernel keeps accepting the master's writes for it, and delivers them
// after the master died); then locks are taken, the master is killed
// (SIGKILL) and the replica resumed, and the sentinels promote it.
//
// In the gap, a control Locker (no option) obtains gapKeys locks, and a
// Locker with WithReplicaAck(1, 1s) tries gapKeys locks (refused:
// nothing acknowledges them) and one more whose WAIT (3s) is in flight
// when the master dies; before the gap the latter Locker took gapKeys
// locks, acknowledged. After the promotion a second client tries every
// lock. The control's locks are granted again while their holders still
// hold them (the detector works: >= 1 double grant, in every trial); the
// acknowledged Lockers' never are (0), and their locks from before the gap
// are still held on the new master.
func FailoverReplicaAck(t *testing.T, top Topology) {
	if testing.Short() {
		t.Skip("runs failoverTrials Sentinel failovers")
	}
	var total trialResult
	for i := range failoverTrials {
		r := failoverTrial(t, top, i)
		overlap := ""
		if r.overlap > 0 {
			overlap = fmt.Sprintf("; a control holder went on %v after the second grant", r.overlap.Round(time.Millisecond))
		}
		t.Logf("trial %d: control double grants %d of %d, acknowledged double grants %d, refused in the gap %d of %d, acknowledged locks kept %d of %d; promoted %v after the kill%s",
			i, r.controlDouble, gapKeys, r.ackDouble, r.ackRefused, gapKeys+1, r.ackSurvived, gapKeys, r.promoted.Round(time.Millisecond), overlap)
		if r.controlDouble != gapKeys {
			t.Errorf("trial %d: %d of %d control locks granted twice, want all: the trial made no replication gap", i, r.controlDouble, gapKeys)
		}
		total.controlDouble += r.controlDouble
		total.ackDouble += r.ackDouble
		total.ackRefused += r.ackRefused
		total.ackSurvived += r.ackSurvived
		total.overlap = max(total.overlap, r.overlap)
	}
	t.Logf("%d failovers: control %d of %d locks granted twice (overlap up to %v); WithReplicaAck %d of %d granted twice, %d of %d refused in the gap, %d of %d acknowledged locks kept",
		failoverTrials, total.controlDouble, failoverTrials*gapKeys, total.overlap.Round(time.Millisecond),
		total.ackDouble, failoverTrials*(gapKeys+1), total.ackRefused, failoverTrials*(gapKeys+1), total.ackSurvived, failoverTrials*gapKeys)
	if total.ackDouble != 0 {
		t.Errorf("WithReplicaAck: %d locks granted twice across a failover", total.ackDouble)
	}
	if total.ackSurvived != failoverTrials*gapKeys {
		t.Errorf("WithReplicaAck: %d of %d acknowledged locks lost in the failover", failoverTrials*gapKeys-total.ackSurvived, failoverTrials*gapKeys)
	}
}

// failoverTrial runs one trial on a Sentinel set-up of its own.
func failoverTrial(t *testing.T, top Topology, trial int) trialResult {
	t.Helper()
	s := redistest.StartSentinel(t, 1)
	ctx := context.Background()
	control := top.Sentinel(t, s) // the default watchdog: renewed every 10s
	// A second's timeout: the locks before the gap must be acknowledged
	// on a loaded machine too (200ms was once too short under -race).
	acked := top.Sentinel(t, s, locker.WithReplicaAck(1, time.Second))
	inflight := top.Sentinel(t, s, locker.WithReplicaAck(1, 3*time.Second), locker.WithCallTimeout(5*time.Second))
	second := top.Sentinel(t, s)
	key := func(kind string, i int) string { return fmt.Sprintf("t%d-%s-%d", trial, kind, i) }
	// Every lease of the trial is released at its end, so no renewal
	// outlives the trial's clients.
	var leases []*locker.Lease
	var leasesMu sync.Mutex
	keep := func(le *locker.Lease) *locker.Lease {
		if le != nil {
			leasesMu.Lock()
			leases = append(leases, le)
			leasesMu.Unlock()
		}
		return le
	}
	defer func() {
		for _, le := range leases {
			_ = le.Release(ctx)
		}
	}()

	// Held with acknowledgement before the gap.
	var before []*locker.Lease
	for i := range gapKeys {
		before = append(before, keep(MustObtain(t, acked, ctx, key("before", i), locker.Params{})))
	}

	// The gap: the replica frozen, its link dropped.
	master := s.Master(t)
	var replica *redistest.Server
	for _, d := range s.Data {
		if d != master {
			replica = d
		}
	}
	replica.Freeze()
	resumed := false
	defer func() {
		if !resumed {
			replica.Thaw()
		}
	}()
	if _, err := master.Do("CLIENT", "KILL", "TYPE", "replica"); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 10*time.Second, "replica link dropped", func() bool {
		info, err := redigo.String(master.Do("INFO", "replication"))
		return err == nil && strings.Contains(info, "connected_slaves:0")
	})

	var r trialResult
	var mu sync.Mutex
	var wg sync.WaitGroup
	gapControl := make([]*locker.Lease, gapKeys)
	for i := range gapKeys {
		wg.Go(func() { gapControl[i] = keep(mustObtainAsync(t, control, ctx, key("control", i))) })
		wg.Go(func() {
			_, err := acked.Obtain(ctx, key("acked", i), locker.Params{})
			if errors.Is(err, locker.ErrNotReplicated) && errors.Is(err, locker.ErrUnavailable) {
				mu.Lock()
				r.ackRefused++
				mu.Unlock()
			} else {
				t.Errorf("acknowledged Obtain in the gap = %v, want ErrNotReplicated", err)
			}
		})
	}
	wg.Wait()
	type result struct {
		le  *locker.Lease
		err error
	}
	waiting := make(chan result, 1)
	go func() {
		le, err := inflight.Obtain(ctx, key("inflight", 0), locker.Params{})
		waiting <- result{keep(le), err}
	}()
	testwait.Within(t, 10*time.Second, "WAIT in flight", func() bool {
		list, err := redigo.String(master.Do("CLIENT", "LIST"))
		return err == nil && strings.Contains(list, "cmd=wait")
	})
	killed := time.Now()
	s.KillMaster(t)
	replica.Thaw()
	resumed = true
	w := <-waiting
	if w.err == nil {
		t.Errorf("Obtain whose WAIT the master's death cut short succeeded")
	} else {
		r.ackRefused++
	}
	s.WaitNewMaster(t, master, 30*time.Second)
	r.promoted = time.Since(killed)

	// The second client tries every lock. A lock it gets while a holder
	// still holds it is a double grant.
	try := func(k string) *locker.Lease {
		var le *locker.Lease
		testwait.Within(t, 20*time.Second, "second client reaches the new master", func() bool {
			var err error
			le, err = second.Obtain(ctx, k, locker.Params{TTL: time.Minute})
			return err == nil || errors.Is(err, locker.ErrNotObtained)
		})
		return keep(le)
	}
	var doubled *locker.Lease
	var doubledAt time.Time
	for i, held := range gapControl {
		if held == nil {
			continue // reported by mustObtainAsync
		}
		if got := try(key("control", i)); got != nil && !held.Lost() {
			r.controlDouble++
			if doubled == nil {
				doubled, doubledAt = held, time.Now()
			}
		}
	}
	for i, held := range before {
		got := try(key("before", i))
		switch {
		case got == nil:
			r.ackSurvived++
		case !held.Lost():
			r.ackDouble++
		}
	}
	if w.le != nil {
		if got := try(key("inflight", 0)); got != nil && !w.le.Lost() {
			r.ackDouble++
		}
	}
	if trial == 0 && doubled != nil {
		// How long the first control holder goes on after the second
		// grant: until its next renewal is refused by the new master.
		// Measured once (it takes up to a renewal period).
		select {
		case <-doubled.Context().Done():
			r.overlap = time.Since(doubledAt)
		case <-time.After(15 * time.Second):
			t.Errorf("control holder of %s not told within 15s", doubled.Key())
		}
	}
	return r
}

// mustObtainAsync is mustObtain for a goroutine: it reports with Errorf.
func mustObtainAsync(t *testing.T, lk *locker.Locker, ctx context.Context, key string) *locker.Lease {
	le, err := lk.Obtain(ctx, key, locker.Params{})
	if err != nil {
		t.Errorf("Obtain(%q): %v", key, err)
	}
	return le
}

// ClusterReplicaAck checks that, on a Cluster of 3 masters with a replica each,
// WithReplicaAck sends WAIT to the master of each lock's slot, on the
// connection of the lock's script: a lock on every master is, when Obtain
// returns, on that master's replica too (read there with READONLY).
// With two replicas asked of one, Obtain fails with ErrNotReplicated.
func ClusterReplicaAck(t *testing.T, top Topology) {
	if testing.Short() {
		t.Skip("a Cluster with replicas: run without -short")
	}
	c := redistest.StartCluster(t, 3, 1)
	keys := KeysOnEveryMaster(t, c)
	// Every replica online on its master's side (WAIT counts only those).
	testwait.Within(t, 20*time.Second, "replicas online", func() bool {
		for _, m := range c.Masters(t) {
			info, err := redigo.String(m.Do("INFO", "replication"))
			if err != nil || !strings.Contains(info, "state=online") {
				return false
			}
		}
		return true
	})
	ctx := context.Background()
	lk := top.Cluster(t, c, locker.WithReplicaAck(1, 1500*time.Millisecond))
	for m, key := range keys {
		le, err := lk.Obtain(ctx, key, locker.Params{})
		if err != nil {
			info, _ := redigo.String(m.Do("INFO", "replication"))
			t.Fatalf("Obtain(%q) on %s: %v\n%s", key, m.Addr(), err, info)
		}
		if n := nodesWith(t, c, "locktag:{"+key+"}"); n != 2 {
			t.Errorf("%s: on %d nodes when Obtain returned, want its master and replica", key, n)
		}
		if err := le.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	two := top.Cluster(t, c, locker.WithReplicaAck(2, 100*time.Millisecond))
	for _, key := range keys {
		if _, err := two.Obtain(ctx, key, locker.Params{}); !errors.Is(err, locker.ErrNotReplicated) {
			t.Errorf("%s: Obtain asking 2 of 1 replicas = %v, want ErrNotReplicated", key, err)
		}
	}
}

// nodesWith counts the cluster's nodes that have key, replicas included
// (READONLY lets a replica answer for its master's slots).
func nodesWith(t *testing.T, c *redistest.Cluster, key string) int {
	t.Helper()
	n := 0
	for _, s := range c.Nodes {
		conn, err := redigo.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Do("READONLY"); err != nil {
			t.Fatal(err)
		}
		if ok, err := redigo.Int(conn.Do("EXISTS", key)); err == nil && ok == 1 {
			n++
		}
		conn.Close()
	}
	return n
}
