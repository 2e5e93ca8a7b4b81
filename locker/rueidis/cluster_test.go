package rueidis_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker/rueidis"
)

// TestCluster runs the locker through rueidis' cluster client on a local
// 3-master Redis Cluster made by redis-cli --cluster create; the subtests
// share it: lockertest.Cluster's behaviours, and this driver's minimal ACL.
func TestCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0)
	keys := lockertest.KeysOnEveryMaster(t, c)

	lockertest.Cluster(t, topology, c, keys)
	t.Run("MinimalACL", func(t *testing.T) { testClusterACL(t, c, keys) })
}

// TestClusterReplicaEviction: lockertest.ClusterReplicaEviction through
// this driver's Cluster client: Check reads every replica's
// maxmemory-policy (the cluster client's connections to them) and refuses
// an evicting one by its address.
func TestClusterReplicaEviction(t *testing.T) { lockertest.ClusterReplicaEviction(t, topology) }

// TestClusterNodeDown: rueidis sends a command without keys (CLUSTER
// SLOTS, which Masters and Replicas read) and dedicates a subscriber
// connection to a node it picks at random among all it knows, a replica
// that is down too. The driver then asks another node, and Listen tries
// another, so with one of 6 nodes down every Listen opens and every
// Check passes (the replica skipped). Without the retries about one
// Listen in 10 fails (the control run failed at the 7th, 17th and 12th),
// and Check fails with ErrUnavailable as often or more.
func TestClusterNodeDown(t *testing.T) {
	c := redistest.StartCluster(t, 3, 1)
	masters := c.Masters(t)
	cc := clusterClient(t, c)
	d := rueidis.New(cc)
	lk := newLocker(t, cc)
	for _, n := range c.Nodes {
		if !slices.Contains(masters, n) {
			n.Stop()
			break
		}
	}
	for i := range 40 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		l, err := d.Listen(ctx, func(string, string) {}, func(error) {})
		if err != nil {
			cancel()
			t.Fatalf("Listen %d with a replica down: %v", i, err)
		}
		_ = l.Close()
		err = lk.Check(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Check %d with a replica down: %v", i, err)
		}
	}
}
