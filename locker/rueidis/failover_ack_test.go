package rueidis_test

import (
	"testing"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/rueidis"
)

// topology makes the shared topology suites' Lockers through this
// driver's Sentinel and Cluster clients.
var topology = lockertest.Topology{
	Sentinel: func(t testing.TB, s *redistest.Sentinels, opts ...locker.Option) *locker.Locker {
		return newLocker(t, failoverClient(t, s), opts...)
	},
	Cluster: func(t testing.TB, c *redistest.Cluster, opts ...locker.Option) *locker.Locker {
		return newLocker(t, clusterClient(t, c), opts...)
	},
	ClusterDriver: func(t testing.TB, c *redistest.Cluster) driver.Driver {
		return rueidis.New(clusterClient(t, c))
	},
}

// TestFailoverReplicaAck: lockertest.FailoverReplicaAck through this
// driver's Sentinel client (the documented Sentinel path): without
// WithReplicaAck a failover grants held locks again; with it, never.
func TestFailoverReplicaAck(t *testing.T) { lockertest.FailoverReplicaAck(t, topology) }

// TestClusterReplicaAck: lockertest.ClusterReplicaAck through this
// driver's Cluster client: WithReplicaAck waits on each lock's own master.
func TestClusterReplicaAck(t *testing.T) { lockertest.ClusterReplicaAck(t, topology) }

// TestClusterReshard: lockertest.Reshard through this driver's Cluster
// client: a lock's slot moved 60 times under traffic costs no failed
// release, no error and no stalled waiter.
func TestClusterReshard(t *testing.T) { lockertest.Reshard(t, topology, 60) }
