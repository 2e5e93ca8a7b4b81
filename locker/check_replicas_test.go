package locker_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

// TestCheckReplicas: Check reads, with a read-only script, the settings
// of every replica its driver lists (driver.Replicas; here a redigo
// driver on a real replica, redis-server --replicaof, with maxmemory
// 50mb and allkeys-lru, the master noeviction). The evicting replica is
// refused by its address (the master alone would pass), or is a risk
// with WithEvictionAllowed; a replica the driver cannot reach, or whose
// user may not run the script or INFO, is a risk; one that does not
// answer is skipped, at Debug. ServerFacts lists the replica after the
// master, marked as one.
func TestCheckReplicas(t *testing.T) {
	master := redistest.Start(t)
	host, port, _ := strings.Cut(master.Addr(), ":")
	replica := redistest.Start(t, redistest.WithArgs("--replicaof", host, port, "--maxmemory", "50mb", "--maxmemory-policy", "allkeys-lru"))
	replica.SetUser(t, "noscripting", aclPassword, "~*", "&*", "+@all", "-@scripting")
	replica.SetUser(t, "noinfo", aclPassword, "~*", "&*", "+@all", "-info")
	free, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	down := "127.0.0.1:" + strconv.Itoa(free) // nothing listens there
	downPool := &redis.Pool{Dial: func() (redis.Conn, error) {
		return redis.Dial("tcp", down, redis.DialConnectTimeout(time.Second))
	}}
	t.Cleanup(func() { _ = downPool.Close() })
	on := func(addr string, p *redis.Pool) func() []driver.Replica {
		return func() []driver.Replica { return []driver.Replica{{Addr: addr, Driver: redigo.New(p)}} }
	}
	cases := []struct {
		name     string
		replicas func() []driver.Replica
		allow    bool
		refused  string // in Check's error; "": Check passes
		risk     string // in the one risk; "": none
		skipped  string // in a Debug record's cause
		listed   bool   // ServerFacts lists the replica
	}{
		{name: "evicting", replicas: on(replica.Addr(), replica.Pool(t)), listed: true,
			refused: "replica " + replica.Addr() + ": maxmemory-policy allkeys-lru with a maxmemory: once a failover promotes it"},
		{name: "evicting allowed", replicas: on(replica.Addr(), replica.Pool(t)), allow: true, listed: true,
			risk: "replica " + replica.Addr() + ": maxmemory-policy allkeys-lru with a maxmemory: once a failover promotes it, Redis may evict a held lock's key and grant the lock again while its holder runs; accepted by locker.WithEvictionAllowed"},
		{name: "no way to reach it", replicas: func() []driver.Replica {
			return []driver.Replica{{Addr: "10.0.0.1:6379", Err: errors.New("no credentials to dial it with")}}
		}, risk: "replica 10.0.0.1:6379 not checked (no credentials to dial it with)"},
		{name: "down", replicas: on(down, downPool), skipped: "replica " + down + " not checked: it did not answer"},
		{name: "scripting refused", replicas: on(replica.Addr(), replica.UserPool(t, "noscripting", aclPassword)),
			risk: "replica " + replica.Addr() + " refused the script that reads its settings"},
		{name: "INFO refused", replicas: on(replica.Addr(), replica.UserPool(t, "noinfo", aclPassword)), listed: true,
			risk: "INFO is refused to this user on replica " + replica.Addr()},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log, rec := logtest.New()
			opts := []locker.Option{locker.WithLogger(log)}
			if c.allow {
				opts = append(opts, locker.WithEvictionAllowed())
			}
			lk := newLockerOn(t, lockertest.WithReplicas(redigo.New(master.Pool(t)), c.replicas), opts...)
			err := lk.Check(ctx)
			switch {
			case c.refused == "" && err != nil:
				t.Fatalf("Check = %v, want nil", err)
			case c.refused != "" && (!errors.Is(err, locker.ErrEvictionPolicy) || !errors.Is(err, locker.ErrUnsupported) || errors.Is(err, locker.ErrUnavailable) || !strings.Contains(err.Error(), c.refused)):
				t.Fatalf("Check = %v, want ErrEvictionPolicy saying %q", err, c.refused)
			}
			if r := lk.Risks(); c.risk == "" && len(r) != 0 || c.risk != "" && (len(r) != 1 || !strings.Contains(r[0], c.risk)) {
				t.Fatalf("Risks() = %q, want %q", r, c.risk)
			}
			if c.skipped != "" {
				recs := rec.Matching("a redis replica was not checked")
				if len(recs) != 1 || recs[0].Level != slog.LevelDebug || !strings.Contains(recs[0].Attrs["cause"], c.skipped) {
					t.Fatalf("want one Debug record saying %q:\n%s", c.skipped, rec)
				}
			}
			facts, err := lk.ServerFacts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if facts[0].Replica || facts[0].Addr != "" || facts[0].Evicting() {
				t.Fatalf("ServerFacts[0] = %+v, want the master, noeviction", facts[0])
			}
			switch {
			case !c.listed && len(facts) != 1:
				t.Fatalf("ServerFacts = %+v, want the master alone", facts)
			case c.listed && (len(facts) != 2 || !facts[1].Replica || facts[1].Addr != replica.Addr()):
				t.Fatalf("ServerFacts = %+v, want the master, then replica %s", facts, replica.Addr())
			case c.listed && facts[1].Known && (!facts[1].Evicting() || facts[1].MaxMemory != 50<<20):
				t.Fatalf("the replica's facts %+v, want allkeys-lru with 50 MB", facts[1])
			}
		})
	}
}
