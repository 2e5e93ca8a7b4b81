package rueidis_test

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
)

// failoverClient is a rueidis Sentinel client for s (ClientOption.Sentinel,
// InitAddress naming the sentinels), closed when the test ends.
func failoverClient(t testing.TB, s *redistest.Sentinels) rueidis.Client {
	t.Helper()
	c := newClient(t, rueidis.ClientOption{
		InitAddress: s.Addrs(),
		Sentinel:    rueidis.SentinelOption{MasterSet: redistest.SentinelMaster},
	})
	if c.Mode() != rueidis.ClientModeSentinel {
		t.Fatalf("client mode %s, want sentinel", c.Mode())
	}
	return c
}

// TestSentinelFailover: lockertest.SentinelFailover through this driver's
// Sentinel client: a lock held across a failover is renewed on the new
// master or reported lost, and locking and waiting work on afterwards.
func TestSentinelFailover(t *testing.T) { lockertest.SentinelFailover(t, topology) }

// TestSentinelMasterCrash: lockertest.SentinelMasterCrash through this
// driver's Sentinel client.
func TestSentinelMasterCrash(t *testing.T) { lockertest.SentinelMasterCrash(t, topology) }
