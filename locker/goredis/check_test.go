package goredis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

const aclPassword = "check-secret"

// goredisACLExtras are the rules go-redis needs beyond locker.ACLRules on
// a Cluster (docs/servers.md): the slot map (CLUSTER SLOTS up to v9.23,
// CLUSTER SHARDS after), and the command table it asks for (it routes the
// locker's scripts without it, but every new connection then logs an ACL
// denial).
var goredisACLExtras = []string{"+cluster|slots", "+cluster|shards", "+command"}

// TestCheckMinimalACL: through go-redis, a user with exactly
// locker.ACLRules passes Check and locks, waits by notification, renews,
// keeps idempotency records and force-releases; a user denied scripting
// or pub/sub gets ErrUnsupported naming it.
func TestCheckMinimalACL(t *testing.T) {
	srv := redistest.Start(t)
	probe := newLocker(t, plainClient(t, srv))
	srv.SetUser(t, "locktag", aclPassword, probe.ACLRules()...)
	srv.SetUser(t, "noscripting", aclPassword, "~*", "&*", "+@all", "-@scripting")
	srv.SetUser(t, "nopubsub", aclPassword, "~*", "&*", "+@all", "-@pubsub")
	as := func(user string) redis.UniversalClient {
		return plainClient(t, srv, func(o *redis.Options) { o.Username, o.Password = user, aclPassword })
	}
	rdb := as("locktag")
	a := newLocker(t, rdb, locker.WithWatchdog(600*time.Millisecond, 200*time.Millisecond))
	b := newLocker(t, as("locktag"))
	goredisWorkload(t, a, b, rdb, "single")

	ctx := context.Background()
	for user, want := range map[string]string{"noscripting": "scripting: EVALSHA and EVAL refused", "nopubsub": "pub/sub: SUBSCRIBE refused"} {
		err := newLocker(t, as(user)).Check(ctx)
		if !errors.Is(err, locker.ErrUnsupported) || errors.Is(err, locker.ErrUnavailable) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Check = %v, want ErrUnsupported saying %q", user, err, want)
		}
	}
}

// testClusterACL: on the Cluster, a user with locker.ACLRules and
// go-redis's extras passes Check (every master runs the check script and
// publishes to one subscriber) and locks; without the extras Check names
// go-redis's refused command.
func testClusterACL(t *testing.T, c *redistest.Cluster, keys map[*redistest.Server]string) {
	probe := newLocker(t, clusterClient(t, c))
	as := func(user string) *redis.ClusterClient {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Username: user, Password: aclPassword,
			ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { _ = cc.Close() })
		return cc
	}
	for _, n := range c.Nodes {
		n.SetUser(t, "locktag", aclPassword, append(probe.ACLRules(), goredisACLExtras...)...)
		n.SetUser(t, "noslots", aclPassword, probe.ACLRules()...)
	}
	ctx := context.Background()
	err := newLocker(t, as("noslots")).Check(ctx)
	if !errors.Is(err, locker.ErrUnsupported) || !strings.Contains(err.Error(), "cluster|slots") && !strings.Contains(err.Error(), "cluster|shards") {
		t.Errorf("Check without the slot map's command = %v, want ErrUnsupported naming it", err)
	}
	rdb := as("locktag")
	lk := newLocker(t, rdb)
	if err := lk.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
	other := newLocker(t, as("locktag"))
	for _, key := range keys {
		if took := waitHandOver(t, other, lk, rdb, "acl-"+key); took > 5*time.Second {
			t.Errorf("%s: waiter woke %v after the release: not by notification", key, took)
		}
	}
}

// goredisWorkload: the locker's calls through a and b, two Lockers
// logged in as one restricted user, fail the test on any error.
func goredisWorkload(t *testing.T, a, b *locker.Locker, rdb redis.UniversalClient, tag string) {
	t.Helper()
	ctx := context.Background()
	for _, lk := range []*locker.Locker{a, b} {
		if err := lk.Check(ctx); err != nil {
			t.Fatalf("Check: %v", err)
		}
	}
	key := "acl-" + tag
	le := mustObtain(t, a, ctx, key, locker.Params{})
	mustRelease(t, mustObtain(t, a, le.Context(), key, locker.Params{}))
	start := time.Now()
	eventually(t, 10*time.Second, "held past two leases", func() bool { return le.Lost() || time.Since(start) > 1200*time.Millisecond })
	if le.Lost() {
		t.Fatalf("lease lost: %v", context.Cause(le.Context()))
	}
	mustRelease(t, le)
	if took := waitHandOver(t, a, b, rdb, key); took > 5*time.Second {
		t.Fatalf("waiter woke %v after the release: not by notification", took)
	}
	s := mustObtain(t, a, ctx, key+":sem", locker.Params{Limit: 2})
	mustRelease(t, s)
	name := locker.IdempotencyName("POST /pay", "user:1", key)
	claim, err := a.Idempotent(ctx, name, "body", locker.IdempotencyParams{})
	if err != nil {
		t.Fatalf("Idempotent: %v", err)
	}
	if err := claim.Complete(ctx, []byte("done")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	again, err := b.Idempotent(ctx, name, "body", locker.IdempotencyParams{})
	if err != nil {
		t.Fatalf("Idempotent again: %v", err)
	}
	if out, ok := again.Replay(); !ok || string(out) != "done" {
		t.Fatalf("replay: %q %v", out, ok)
	}
	held := mustObtain(t, a, ctx, key+":ops", locker.Params{})
	if err := b.ForceRelease(ctx, key+":ops", "acl test"); err != nil {
		t.Fatalf("ForceRelease: %v", err)
	}
	select {
	case <-held.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("force-released holder's context not cancelled")
	}
}

// TestCheckReplicaOfPlainClient: on a plain client, Check reads the
// settings of the replicas the master's INFO replication names, dialled
// with the client's options: here as the locktag user, the only one the
// replica lets in (its default user is off), so a probe without the
// client's credentials would find nothing to refuse. The replica's
// allkeys-lru with a maxmemory is refused by its address.
func TestCheckReplicaOfPlainClient(t *testing.T) {
	master := redistest.Start(t)
	host, port, _ := strings.Cut(master.Addr(), ":")
	replica := redistest.Start(t, redistest.WithArgs("--replicaof", host, port, "--maxmemory", "50mb", "--maxmemory-policy", "allkeys-lru"))
	probe := newLocker(t, plainClient(t, master))
	for _, srv := range []*redistest.Server{master, replica} {
		srv.SetUser(t, "locktag", aclPassword, probe.ACLRules()...)
	}
	ctx := context.Background()
	eventually(t, 10*time.Second, "the master lists its replica", func() bool {
		info, err := plainClient(t, master).Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "port="+replica.Addr()[strings.LastIndexByte(replica.Addr(), ':')+1:])
	})
	if _, err := replica.Do("ACL", "SETUSER", "default", "off"); err != nil {
		t.Fatal(err)
	}
	rdb := plainClient(t, master, func(o *redis.Options) { o.Username, o.Password = "locktag", aclPassword })
	err := newLocker(t, rdb).Check(ctx)
	if !errors.Is(err, locker.ErrEvictionPolicy) || !strings.Contains(err.Error(), "replica "+replica.Addr()+": maxmemory-policy allkeys-lru") {
		t.Fatalf("Check = %v, want ErrEvictionPolicy naming replica %s", err, replica.Addr())
	}
}
