package rueidis_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	lockrueidis "github.com/locktag/locktag/locker/rueidis"
)

// failoverClient is a rueidis Sentinel client for s (ClientOption.Sentinel,
// InitAddress naming the sentinels), closed when the test ends.
func failoverClient(t testing.TB, s *redistest.Sentinels) rueidis.Client {
	t.Helper()
	c := newClient(t, sentinelOption(s))
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

// sentinelOption is a rueidis Sentinel client's options for s.
func sentinelOption(s *redistest.Sentinels) rueidis.ClientOption {
	return rueidis.ClientOption{
		InitAddress: s.Addrs(),
		Sentinel:    rueidis.SentinelOption{MasterSet: redistest.SentinelMaster},
	}
}

// TestSentinelReplicaEviction: lockertest.SentinelReplicaEviction through
// a driver made by NewFromOption with Sentinel options: Check reads the
// maxmemory-policy of every replica the master's INFO replication names,
// dialled with those options, and refuses an evicting one by its address.
func TestSentinelReplicaEviction(t *testing.T) {
	lockertest.SentinelReplicaEviction(t, lockertest.Topology{
		Sentinel: func(t testing.TB, s *redistest.Sentinels, opts ...locker.Option) *locker.Locker {
			t.Helper()
			lk, err := locker.New(lockrueidis.NewFromOption(sentinelOption(s)), opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = lk.Close() })
			return lk
		},
	})
}

// TestSentinelReplicasWithoutOptions: a driver made by New on a Sentinel
// client has no options to dial the replicas with, so Check cannot read
// their policy, even an evicting one: it passes, and lists each replica
// as a risk that says to use NewFromOption.
func TestSentinelReplicasWithoutOptions(t *testing.T) {
	s := redistest.StartSentinel(t, 1)
	replica := s.Data[1]
	if _, err := replica.Do("CONFIG", "SET", "maxmemory", "50mb", "maxmemory-policy", "allkeys-lru"); err != nil {
		t.Fatal(err)
	}
	lk := newLocker(t, failoverClient(t, s))
	if err := lk.Check(context.Background()); err != nil {
		t.Fatalf("Check = %v, want a pass with a risk", err)
	}
	if r := lk.Risks(); len(r) != 1 || !strings.Contains(r[0], "replica "+replica.Addr()+" not checked") || !strings.Contains(r[0], "NewFromOption") {
		t.Fatalf("Risks() = %q, want replica %s not checked, naming NewFromOption", r, replica.Addr())
	}
}
