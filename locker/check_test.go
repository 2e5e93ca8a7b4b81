package locker_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

const aclPassword = "check-secret"

// TestCheckRefusals: a user whose ACL denies what the locker needs gets
// one error from Check, from the first Ping and from Healthy, matching
// ErrUnsupported (not ErrUnavailable: the server answered) and naming
// what is missing. A user with every permission passes.
func TestCheckRefusals(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		rules []string
		want  []string // in the error; nil: Check passes
	}{
		{"all", []string{"~*", "&*", "+@all"}, nil},
		{"noscripting", []string{"~*", "&*", "+@all", "-@scripting"}, []string{"scripting: EVALSHA and EVAL refused", "NOPERM", "'evalsha'", "+evalsha +eval"}},
		{"nopubsub", []string{"~*", "&*", "+@all", "-@pubsub"}, []string{"pub/sub: SUBSCRIBE refused", "'subscribe'", "denied to this user on keys locktag:*: PUBLISH"}},
		{"notime", []string{"~*", "&*", "+@all", "-time"}, []string{"denied to this user on keys locktag:*: TIME: allow +time on ~locktag:* &locktag:*"}},
		{"nozpopmin", []string{"~*", "&*", "+@all", "-zpopmin", "-publish"}, []string{"PUBLISH ZPOPMIN: allow +publish +zpopmin on"}},
		{"otherkeys", []string{"~other:*", "&*", "+@all"}, []string{"denied to this user on keys locktag:*: DEL EXISTS GET"}},
		{"otherchannels", []string{"~*", "&other:*", "+@all"}, []string{"PUBLISH", "pub/sub: SUBSCRIBE refused", "channel"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv.SetUser(t, c.name, aclPassword, c.rules...)
			lk := newLockerOn(t, redigo.New(srv.UserPool(t, c.name, aclPassword)))
			for _, call := range []struct {
				what string
				fn   func(context.Context) error
			}{{"Ping", lk.Ping}, {"Check", lk.Check}, {"Healthy", lk.Healthy}} {
				err := call.fn(ctx)
				if c.want == nil {
					if err != nil {
						t.Fatalf("%s: %v", call.what, err)
					}
					continue
				}
				if !errors.Is(err, locker.ErrUnsupported) || errors.Is(err, locker.ErrUnavailable) {
					t.Fatalf("%s = %v, want ErrUnsupported only", call.what, err)
				}
				if call.what == "Check" {
					t.Logf("%s: %v", call.what, err)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s's error does not say %q:\n%v", call.what, w, err)
					}
				}
				if strings.Contains(err.Error(), aclPassword) {
					t.Errorf("%s's error shows the password: %v", call.what, err)
				}
			}
		})
	}
}

// TestCheckRedlock: Check and Ping want every master; Healthy a majority,
// so one master whose user may not run scripts fails the first two with
// ErrUnsupported naming it, not the third.
func TestCheckRedlock(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	ds := make([]driver.Driver, len(srvs))
	for i, s := range srvs {
		rules := []string{"~*", "&*", "+@all"}
		if i == 2 {
			rules = append(rules, "-@scripting")
		}
		s.SetUser(t, "locky", aclPassword, rules...)
		ds[i] = redigo.New(s.UserPool(t, "locky", aclPassword))
	}
	lk, err := locker.NewRedlock(ds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	ctx := context.Background()
	for _, call := range []struct {
		what string
		fn   func(context.Context) error
	}{{"Check", lk.Check}, {"Ping", lk.Ping}} {
		err := call.fn(ctx)
		if !errors.Is(err, locker.ErrUnsupported) || errors.Is(err, locker.ErrUnavailable) ||
			!strings.Contains(err.Error(), "master 2: locker: server lacks what the locker needs: scripting") {
			t.Errorf("%s = %v, want ErrUnsupported naming master 2's scripting", call.what, err)
		}
	}
	if err := lk.Healthy(ctx); err != nil {
		t.Errorf("Healthy with 2 of 3 masters able = %v", err)
	}
	srvs[1].Stop()
	if err := lk.Check(ctx); !errors.Is(err, locker.ErrUnsupported) || !errors.Is(err, locker.ErrUnavailable) {
		t.Errorf("Check with one master down and one unable = %v, want both ErrUnavailable and ErrUnsupported", err)
	}
}

// TestCheckMinimalACL: a user with exactly the rules ACLRules gives (and
// docs/servers.md prints) passes Check and runs every operation of the
// locker: lock, re-entry, renewal, waiting by notification, semaphores,
// read/write and multi-key locks, idempotency records and
// InspectIdempotency, Inspect, List and ForceRelease — through the
// pipelined and the pooled redigo driver.
func TestCheckMinimalACL(t *testing.T) {
	srv := redistest.Start(t)
	probe := newLocker(t, srv)
	srv.SetUser(t, "locktag", aclPassword, probe.ACLRules()...)
	for _, c := range []struct {
		name string
		opts []redigo.Option
	}{{"pipelined", nil}, {"pooled", []redigo.Option{redigo.WithPipelining(0)}}} {
		t.Run(c.name, func(t *testing.T) {
			mk := func() *locker.Locker {
				return newLockerOn(t, redigo.New(srv.UserPool(t, "locktag", aclPassword), c.opts...),
					locker.WithWatchdog(600*time.Millisecond, 200*time.Millisecond))
			}
			aclWorkload(t, srv, mk(), mk(), c.name)
		})
	}
}

// TestACLRulesDocumented: docs/servers.md prints the rules ACLRules gives
// for the default prefix.
func TestACLRulesDocumented(t *testing.T) {
	var page []byte
	for _, f := range []string{"../docs/servers.md", "../docs/production.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		page = append(page, b...)
	}
	nowhere := &redis.Pool{Dial: func() (redis.Conn, error) { return nil, errors.New("no server") }}
	lk, err := locker.New(redigo.New(nowhere))
	if err != nil {
		t.Fatal(err)
	}
	rules := strings.Join(lk.ACLRules(), " ")
	if n := strings.Count(string(page), rules); n != 2 {
		t.Fatalf("docs/servers.md and docs/production.md do not both print ACLRules() (%d found):\n%s", n, rules)
	}
	for _, r := range []string{"~locktag:*", "&locktag:*", "-@all", "+evalsha", "+eval", "+subscribe", "+time", "+zpopmin", "+publish"} {
		if !strings.Contains(" "+rules+" ", " "+r+" ") {
			t.Errorf("ACLRules() lacks %s: %s", r, rules)
		}
	}
	custom, err := locker.New(redigo.New(nowhere), locker.WithKeyPrefix("shop:"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(custom.ACLRules()[:5], " "); got != "resetkeys ~shop:* resetchannels &shop:* &locktag:listener*" {
		t.Errorf("ACLRules() with prefix shop: starts %q", got)
	}
}

// aclWorkload runs every kind of locker call through a and b (two
// Lockers logged in as the same restricted user) and fails the test on
// any error.
func aclWorkload(t *testing.T, srv *redistest.Server, a, b *locker.Locker, tag string) {
	t.Helper()
	ctx := context.Background()
	for _, lk := range []*locker.Locker{a, b} {
		if err := lk.Check(ctx); err != nil {
			t.Fatalf("Check: %v", err)
		}
	}
	key := "acl-" + tag

	// Lock, re-enter, renew past two leases, release.
	le := mustObtain(t, a, ctx, key, locker.Params{})
	inner := mustObtain(t, a, le.Context(), key, locker.Params{})
	if err := inner.Release(ctx); err != nil {
		t.Fatalf("release of the re-entered hold: %v", err)
	}
	start := time.Now()
	eventually(t, 10*time.Second, "held past two leases", func() bool { return le.Lost() || time.Since(start) > 1200*time.Millisecond })
	if le.Lost() {
		t.Fatalf("lease lost: %v", context.Cause(le.Context()))
	}

	// Waiting: b queues and is handed the lock by notification.
	got := make(chan error, 1)
	go func() {
		w, err := b.Obtain(ctx, key, locker.Params{Wait: 20 * time.Second})
		if err == nil {
			err = w.Release(ctx)
		}
		got <- err
	}()
	eventually(t, 10*time.Second, "waiter queued", func() bool { return queueLen(t, srv, key) == 1 })
	released := time.Now()
	if err := le.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if took := time.Since(released); took > 5*time.Second {
		t.Fatalf("waiter woke %v after the release: not by notification", took)
	}

	// Semaphore, read/write, multi-key.
	s1 := mustObtain(t, a, ctx, key+":sem", locker.Params{Limit: 2})
	s2 := mustObtain(t, b, ctx, key+":sem", locker.Params{Limit: 2})
	if _, err := a.Obtain(ctx, key+":sem", locker.Params{Limit: 2}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("third permit of 2: %v", err)
	}
	r1 := mustObtain(t, a, ctx, key+":rw", locker.Params{Mode: locker.Read})
	if _, err := b.Obtain(ctx, key+":rw", locker.Params{Mode: locker.Write}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("writer beside a reader: %v", err)
	}
	m, err := a.ObtainMany(ctx, []string{key + ":m1", key + ":m2"}, locker.Params{})
	if err != nil {
		t.Fatalf("ObtainMany: %v", err)
	}
	for _, l := range []*locker.Lease{s1, s2, r1, m} {
		if err := l.Release(ctx); err != nil {
			t.Fatalf("release %s: %v", l.Key(), err)
		}
	}

	// Idempotency: execute, complete, replay.
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
	if st, ok, err := b.InspectIdempotency(ctx, name); !ok || err != nil || st.State != locker.IdempotencyDone {
		t.Fatalf("InspectIdempotency: %+v %v %v", st, ok, err)
	}

	// Operations: Inspect, List, ForceRelease (its notice cancels the
	// holder's context at once, through the control channel).
	held := mustObtain(t, a, ctx, key+":ops", locker.Params{})
	st, err := b.Inspect(ctx, key+":ops")
	if err != nil || len(st.Holders) != 1 {
		t.Fatalf("Inspect: %+v %v", st, err)
	}
	names, _, err := b.List(ctx, key+":ops", "")
	if err != nil || len(names) != 1 {
		t.Fatalf("List: %v %v", names, err)
	}
	if err := b.ForceRelease(ctx, key+":ops", "acl test"); err != nil {
		t.Fatalf("ForceRelease: %v", err)
	}
	select {
	case <-held.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("force-released holder's context not cancelled")
	}
}
