package lockertest

import (
	"context"
	"errors"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
)

// sentinelQueued reads waiter queues on s's current master.
func sentinelQueued(t testing.TB, s *redistest.Sentinels) queueLen {
	return queueOn(t, func(string) *redistest.Server { return s.Master(t) })
}

// SentinelFailover holds a lock across a Sentinel failover (master + 1
// replica + 3 sentinels, SENTINEL FAILOVER) and records what happens:
//
//   - Replication is asynchronous, so the new master has the lock key only
//     if the write reached the replica before the failover. Here the lock
//     was written long before (on loopback the replica is milliseconds
//     behind), and both outcomes are accepted: the lease keeps being
//     renewed on the new master and still excludes others, or the lease is
//     reported lost.
//   - A lock write the new master did not get (simulated by deleting the
//     key there) makes the next renewal fail: the lease's context is
//     cancelled with ErrLockLost, and the next holder's fencing token is
//     still larger (with the lock gone, it is minted from the server
//     clock).
//   - The locker keeps working on the new master: obtain, and waiting by
//     notification through a new subscriber connection.
func SentinelFailover(t *testing.T, top Topology) {
	if testing.Short() {
		t.Skip("a Sentinel failover takes seconds: run without -short")
	}
	s := redistest.StartSentinel(t, 1)
	old := s.Master(t)
	lk := top.Sentinel(t, s, locker.WithWatchdog(10*time.Second, 500*time.Millisecond))
	other := top.Sentinel(t, s)
	ctx := context.Background()

	// other's subscriber connection is opened before the failover: the
	// failover breaks it, and waiting must still work afterwards.
	waitHandOver(t, lk, other, sentinelQueued(t, s), "acct:2")

	held := MustObtain(t, lk, ctx, "acct:1", locker.Params{})
	s.WaitReplicated(t, 10*time.Second) // the replica has it

	m := s.Failover(t, 30*time.Second)
	if m == old {
		t.Fatal("failover kept the old master")
	}
	exists, err := redigo.Int(m.Do("EXISTS", "locktag:{acct:1}"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the failover the new master %s has the lock key: %v", m.Addr(), exists == 1)
	// Sentinel disconnects the clients of the old master when it turns it
	// into a replica (CLIENT KILL TYPE normal and pubsub), so other's
	// listener breaks and the next waiter opens one on the new master.
	testwait.Within(t, 20*time.Second, "old master's subscriber disconnected", func() bool {
		v, err := redigo.Strings(old.Do("PUBSUB", "CHANNELS", "locktag:listener:*"))
		return err == nil && len(v) == 0
	})

	if exists == 1 {
		// The lease survives: it is renewed on the new master, and nobody
		// else can take the lock.
		testwait.Within(t, 20*time.Second, "renewal on the new master", func() bool {
			pttl, err := redigo.Int64(m.Do("PTTL", "locktag:{acct:1}"))
			return err == nil && pttl > 9500
		})
		if held.Lost() {
			t.Fatalf("lease lost although the new master has the key: %v", context.Cause(held.Context()))
		}
		if _, err := other.Obtain(ctx, "acct:1", locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
			t.Fatalf("another locker's Obtain after the failover: %v, want ErrNotObtained", err)
		}
	}

	// The write that did not reach the replica: the lock (and with it its
	// fencing token) is gone on the new master.
	if _, err := m.Do("DEL", "locktag:{acct:1}"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Context().Done():
	case <-time.After(15 * time.Second):
		t.Fatal("lease not reported lost after its key vanished")
	}
	if cause := context.Cause(held.Context()); !errors.Is(cause, locker.ErrLockLost) {
		t.Fatalf("lease context cause %v, want ErrLockLost", cause)
	}
	if err := held.Release(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("Release of the lost lease: %v, want ErrNotHeld", err)
	}

	next := MustObtain(t, other, ctx, "acct:1", locker.Params{})
	if next.Token() <= held.Token() {
		t.Fatalf("fencing token after the failover %d not above the lost holder's %d", next.Token(), held.Token())
	}
	mustRelease(t, next)

	took := waitHandOver(t, lk, other, sentinelQueued(t, s), "acct:2")
	if took > 5*time.Second {
		t.Fatalf("waiter woke %v after the release: not by notification", took)
	}
}

// SentinelMasterCrash kills the master (SIGKILL) while a lock is held.
// The sentinels promote the replica after down-after-milliseconds; the
// lease survives if the lock write had reached the replica (made sure here
// with WaitReplicated) and the failover took less than the lease, and the
// locker works on the new master. A write that had not reached the replica is
// lost with the old master: see SentinelFailover for what the holder
// then sees.
func SentinelMasterCrash(t *testing.T, top Topology) {
	if testing.Short() {
		t.Skip("a Sentinel failover takes seconds: run without -short")
	}
	s := redistest.StartSentinel(t, 1)
	lk := top.Sentinel(t, s, locker.WithWatchdog(15*time.Second, 500*time.Millisecond))
	other := top.Sentinel(t, s)
	ctx := context.Background()

	held := MustObtain(t, lk, ctx, "acct:1", locker.Params{})
	// Not WAIT through a connection of its own: it would return at once
	// (see WaitReplicated), and under load the master was killed before
	// the lock write reached the replica — the promoted master refused the
	// next renewal and the lease was lost, as it must be.
	s.WaitReplicated(t, 10*time.Second)
	crashed := time.Now()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%v after the crash: lease lost %v (%v)", time.Since(crashed).Round(time.Millisecond), held.Lost(), context.Cause(held.Context()))
			for _, sn := range s.Sentinels {
				t.Logf("sentinel %s log:\n%s", sn.Addr(), sn.LogTail())
			}
		}
	})
	old := s.KillMaster(t)
	m := s.WaitNewMaster(t, old, 30*time.Second)
	t.Logf("new master %s after %v", m.Addr(), time.Since(crashed).Round(time.Millisecond))

	testwait.Within(t, 20*time.Second, "renewal on the new master", func() bool {
		pttl, err := redigo.Int64(m.Do("PTTL", "locktag:{acct:1}"))
		return err == nil && pttl > 14000
	})
	if held.Lost() {
		t.Fatalf("lease lost although the new master has the key: %v", context.Cause(held.Context()))
	}
	if _, err := other.Obtain(ctx, "acct:1", locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("another locker's Obtain after the failover: %v, want ErrNotObtained", err)
	}
	mustRelease(t, held)
	took := waitHandOver(t, lk, other, sentinelQueued(t, s), "acct:2")
	if took > 5*time.Second {
		t.Fatalf("waiter woke %v after the release: not by notification", took)
	}
}
