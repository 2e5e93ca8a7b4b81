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
