package rueidis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

const aclPassword = "check-secret"

// rueidisACLExtras are the rules rueidis needs beyond locker.ACLRules
// (docs/rueidis.md): with client-side caching on (rueidis' default) it
// turns tracking on for every new connection, and on a Cluster it reads
// the slot map.
var rueidisACLExtras = []string{"+client|tracking", "+cluster|slots", "+cluster|shards"}

// TestCheckMinimalACL: through rueidis, a user with exactly
// locker.ACLRules and rueidis' extras passes Check and locks, waits by
// notification, renews, keeps idempotency records and force-releases; a
// user denied scripting or pub/sub gets ErrUnsupported naming it.
func TestCheckMinimalACL(t *testing.T) {
	srv := redistest.Start(t)
	probe := newLocker(t, plainClient(t, srv))
	srv.SetUser(t, "locktag", aclPassword, append(probe.ACLRules(), rueidisACLExtras...)...)
	srv.SetUser(t, "noscripting", aclPassword, "~*", "&*", "+@all", "-@scripting")
	srv.SetUser(t, "nopubsub", aclPassword, "~*", "&*", "+@all", "-@pubsub")
	as := func(user string) rueidis.Client {
		return plainClient(t, srv, func(o *rueidis.ClientOption) { o.Username, o.Password = user, aclPassword })
	}
	c := as("locktag")
	a := newLocker(t, c, locker.WithWatchdog(600*time.Millisecond, 200*time.Millisecond))
	b := newLocker(t, as("locktag"))
	aclWorkload(t, a, b, c, "single")

	ctx := context.Background()
	for user, want := range map[string]string{"noscripting": "scripting: EVALSHA and EVAL refused", "nopubsub": "pub/sub: SUBSCRIBE refused"} {
		err := newLocker(t, as(user)).Check(ctx)
		if !errors.Is(err, locker.ErrUnsupported) || errors.Is(err, locker.ErrUnavailable) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Check = %v, want ErrUnsupported saying %q", user, err, want)
		}
	}
}

// TestCheckACLWithoutCaching: with ClientOption.DisableCache, locker.ACLRules
// alone are enough on one server.
func TestCheckACLWithoutCaching(t *testing.T) {
	srv := redistest.Start(t)
	probe := newLocker(t, plainClient(t, srv))
	srv.SetUser(t, "locktag", aclPassword, probe.ACLRules()...)
	as := func() rueidis.Client {
		return plainClient(t, srv, func(o *rueidis.ClientOption) {
			o.Username, o.Password, o.DisableCache = "locktag", aclPassword, true
		})
	}
	c := as()
	aclWorkload(t, newLocker(t, c), newLocker(t, as()), c, "nocache")
}

// testClusterACL: on the Cluster, a user with locker.ACLRules and
// rueidis' extras passes Check (every master runs the check script and
// publishes to one subscriber) and locks.
func testClusterACL(t *testing.T, c *redistest.Cluster, keys map[*redistest.Server]string) {
	probe := newLocker(t, clusterClient(t, c))
	as := func(user string) rueidis.Client {
		return clusterClient(t, c, func(o *rueidis.ClientOption) { o.Username, o.Password = user, aclPassword })
	}
	for _, n := range c.Nodes {
		n.SetUser(t, "locktag", aclPassword, append(probe.ACLRules(), rueidisACLExtras...)...)
	}
	ctx := context.Background()
	rc := as("locktag")
	lk := newLocker(t, rc)
	if err := lk.Check(ctx); err != nil {
		t.Fatalf("Check: %v", err)
	}
	other := newLocker(t, as("locktag"))
	for _, key := range keys {
		if took := waitHandOver(t, other, lk, rc, "acl-"+key); took > 5*time.Second {
			t.Errorf("%s: waiter woke %v after the release: not by notification", key, took)
		}
	}
}

// aclWorkload: the locker's calls through a and b, two Lockers logged in
// as one restricted user, fail the test on any error.
func aclWorkload(t *testing.T, a, b *locker.Locker, c rueidis.Client, tag string) {
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
	if took := waitHandOver(t, a, b, c, key); took > 5*time.Second {
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
