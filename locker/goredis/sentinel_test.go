package goredis_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
)

// failoverClient is a go-redis Sentinel client for s, closed when the test
// ends.
func failoverClient(t testing.TB, s *redistest.Sentinels) *redis.Client {
	t.Helper()
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:            redistest.SentinelMaster,
		SentinelAddrs:         s.Addrs(),
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestSentinelFailover: lockertest.SentinelFailover through this driver's
// Sentinel client: a lock held across a failover is renewed on the new
// master or reported lost, and locking and waiting work on afterwards.
func TestSentinelFailover(t *testing.T) { lockertest.SentinelFailover(t, topology) }

// TestSentinelMasterCrash: lockertest.SentinelMasterCrash through this
// driver's Sentinel client.
func TestSentinelMasterCrash(t *testing.T) { lockertest.SentinelMasterCrash(t, topology) }

// TestSentinelReplicaEviction: lockertest.SentinelReplicaEviction through
// this driver's Sentinel client: Check reads the maxmemory-policy of every
// replica the master's INFO replication names, dialled with the client's
// options, and refuses an evicting one by its address.
func TestSentinelReplicaEviction(t *testing.T) { lockertest.SentinelReplicaEviction(t, topology) }
