package locker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// TestCheckEvictionPolicy: with a maxmemory set, every maxmemory-policy
// but noeviction may evict a held lock's key, and Check, Ping and Healthy
// refuse it with ErrEvictionPolicy (and ErrUnsupported, not
// ErrUnavailable) naming the policy and what to set. noeviction, and any
// policy without a maxmemory, pass. WithEvictionAllowed passes and logs
// the risk once.
func TestCheckEvictionPolicy(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	config := func(maxmemory, policy string) {
		t.Helper()
		if _, err := srv.Do("CONFIG", "SET", "maxmemory", maxmemory, "maxmemory-policy", policy); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { config("0", "noeviction") })
	for _, policy := range []string{"allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"} {
		t.Run(policy, func(t *testing.T) {
			config("1gb", policy)
			lk := newLocker(t, srv)
			for _, call := range []struct {
				what string
				fn   func(context.Context) error
			}{{"Check", lk.Check}, {"Ping", lk.Ping}, {"Healthy", lk.Healthy}} {
				err := call.fn(ctx)
				if !errors.Is(err, locker.ErrEvictionPolicy) || !errors.Is(err, locker.ErrUnsupported) || errors.Is(err, locker.ErrUnavailable) {
					t.Fatalf("%s = %v, want ErrEvictionPolicy and ErrUnsupported only", call.what, err)
				}
				for _, want := range []string{"maxmemory-policy " + policy, "set maxmemory-policy noeviction", "locker.WithEvictionAllowed"} {
					if !strings.Contains(err.Error(), want) {
						t.Fatalf("%s = %v, want it to say %q", call.what, err, want)
					}
				}
			}

			log, rec := logtest.New()
			allowed := newLocker(t, srv, locker.WithEvictionAllowed(), locker.WithLogger(log))
			for range 2 {
				if err := allowed.Check(ctx); err != nil {
					t.Fatalf("Check with WithEvictionAllowed: %v", err)
				}
			}
			if n := len(rec.Matching("may break a lock's guarantees")); n != 1 {
				t.Fatalf("the accepted risk was logged %d times, want once:\n%s", n, rec)
			}
			if r := allowed.Risks(); len(r) != 1 || !strings.Contains(r[0], policy) {
				t.Fatalf("Risks() = %q, want the policy %s", r, policy)
			}
		})
	}
	for _, c := range [][2]string{{"1gb", "noeviction"}, {"0", "allkeys-lru"}, {"0", "volatile-ttl"}} {
		t.Run("maxmemory="+c[0]+","+c[1], func(t *testing.T) {
			config(c[0], c[1])
			lk := newLocker(t, srv)
			if err := lk.Check(ctx); err != nil {
				t.Fatalf("Check: %v", err)
			}
			if r := lk.Risks(); len(r) != 0 {
				t.Fatalf("Risks() = %q, want none", r)
			}
		})
	}
}

// TestCheckEvictionInfoDenied: a user who may not run INFO passes Check
// (its policy cannot be read), and the Locker says so once.
func TestCheckEvictionInfoDenied(t *testing.T) {
	srv := redistest.Start(t, redistest.WithArgs("--maxmemory", "1gb", "--maxmemory-policy", "allkeys-lru"))
	srv.SetUser(t, "noinfo", aclPassword, "~*", "&*", "+@all", "-info")
	log, rec := logtest.New()
	lk := newLockerOn(t, redigo.New(srv.UserPool(t, "noinfo", aclPassword)), locker.WithLogger(log))
	if err := lk.Check(context.Background()); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if r := lk.Risks(); len(r) != 1 || !strings.Contains(r[0], "allow +info") {
		t.Fatalf("Risks() = %q, want INFO refused", r)
	}
	if n := len(rec.Matching("may break a lock's guarantees")); n != 1 {
		t.Fatalf("logged %d times, want once:\n%s", n, rec)
	}
}

// fill writes values without a TTL until Redis refuses (OOM) or gone
// reports true, and returns the refusal or nil.
func fill(t *testing.T, srv *redistest.Server, gone func() bool) error {
	t.Helper()
	c := srv.Pool(t).Get()
	defer c.Close()
	value := strings.Repeat("x", 64<<10)
	for batch := range 200 { // at most 200 × 16 × 64 KiB = 200 MiB
		for i := range 16 {
			if err := c.Send("SET", fmt.Sprintf("fill:%d:%d", batch, i), value); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		var refused error
		for range 16 {
			if _, err := c.Receive(); err != nil {
				if !strings.HasPrefix(err.Error(), "OOM") {
					t.Fatal(err)
				}
				refused = err
			}
		}
		if refused != nil {
			return refused
		}
		if gone() {
			return nil
		}
	}
	t.Fatal("Redis neither evicted the lock nor refused a write after 200 MiB")
	return nil
}

// TestEvictionDoubleGrant: a Redis filled to its maxmemory. With
// noeviction the held lock stays and a second Obtain fails (OOM): one
// holder (the second Locker finds it busy, or its script is refused for
// memory). The control, allkeys-lru with WithEvictionAllowed, shows what
// Check refuses by default: the held lock's key is evicted and a second
// Locker obtains the lock while the first holder's context still runs.
func TestEvictionDoubleGrant(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		policy string
		double bool
	}{{"noeviction", false}, {"allkeys-lru", true}} {
		t.Run(c.policy, func(t *testing.T) {
			srv := redistest.Start(t, redistest.WithArgs("--maxmemory", "20mb", "--maxmemory-policy", c.policy))
			a := newLocker(t, srv, locker.WithEvictionAllowed())
			b := newLocker(t, srv, locker.WithEvictionAllowed())
			if err := a.Check(ctx); err != nil {
				t.Fatal(err)
			}
			first, err := a.Obtain(ctx, "evict:me", locker.Params{})
			if err != nil {
				t.Fatal(err)
			}
			held := first.Context()
			refused := fill(t, srv, func() bool {
				st, err := a.Inspect(ctx, "evict:me")
				return err == nil && st.Holder == nil
			})
			second, err := b.Obtain(ctx, "evict:me", locker.Params{})
			granted := err == nil
			if granted {
				defer second.Release(ctx)
			}
			both := granted && held.Err() == nil
			t.Logf("%s: fill refused: %v; second Obtain: %v; first still running: %v", c.policy, refused, err, held.Err() == nil)
			if both != c.double {
				t.Fatalf("%s: two holders at once = %v, want %v", c.policy, both, c.double)
			}
			if !c.double && granted {
				t.Fatal("the second Obtain on a full noeviction Redis was granted")
			}
		})
	}
}
