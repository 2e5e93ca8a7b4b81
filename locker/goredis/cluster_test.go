package goredis_test

import (
	"testing"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
)

// TestCluster runs the locker on a local 3-master Redis Cluster made by
// redis-cli --cluster create; the subtests share it: lockertest.Cluster's
// behaviours, and this driver's minimal ACL.
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
