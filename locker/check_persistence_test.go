package locker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// TestFencingWithoutAOF: on a server without an append-only file, the
// first fencing token a Locker hands out after Check logs the risk once
// (what a restart loses) and lists it in Risks; a Locker that reads no
// token says nothing, and a server with appendonly on is no risk.
func TestFencingWithoutAOF(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		args  []string
		token bool
		want  bool
	}{
		{"appendonly no, token read", nil, true, true},
		{"appendonly no, no token read", nil, false, false},
		{"appendonly yes, token read", []string{"--appendonly", "yes"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t, redistest.WithArgs(tc.args...))
			log, rec := logtest.New()
			lk := newLocker(t, srv, locker.WithLogger(log))
			if err := lk.Check(ctx); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				le, err := lk.Obtain(ctx, fmt.Sprint("fence-", i), locker.Params{})
				if err != nil {
					t.Fatal(err)
				}
				if tc.token && le.Token() <= 0 {
					t.Fatalf("token %d", le.Token())
				}
				if err := le.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			logged := len(rec.Matching("may break a lock's guarantees"))
			risks := lk.Risks()
			got := len(risks) == 1 && strings.Contains(risks[0], "a restart of Redis")
			switch {
			case tc.want && (logged != 1 || !got):
				t.Fatalf("logged %d times, Risks %q; want once and listed:\n%s", logged, risks, rec)
			case !tc.want && (logged != 0 || len(risks) != 0):
				t.Fatalf("logged %d times, Risks %q; want none", logged, risks)
			}
		})
	}
}

// TestServerFacts: ServerFacts reads each master's maxmemory, policy,
// evicted keys and appendonly; the evicted count grows when the server
// evicts.
func TestServerFacts(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	lk := newLocker(t, srv, locker.WithEvictionAllowed())
	f, err := lk.ServerFacts(ctx)
	if err != nil || len(f) != 1 || !f[0].Known || f[0].MaxMemory != 0 || f[0].Policy != "noeviction" || f[0].AOF || f[0].Evicting() {
		t.Fatalf("ServerFacts = %+v, %v", f, err)
	}
	if _, err := srv.Do("CONFIG", "SET", "maxmemory", "4mb", "maxmemory-policy", "allkeys-lru"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = srv.Do("CONFIG", "SET", "maxmemory", "0", "maxmemory-policy", "noeviction") })
	value := strings.Repeat("x", 64<<10)
	for i := range 200 {
		if _, err := srv.Do("SET", fmt.Sprint("fill:", i), value); err != nil {
			t.Fatal(err)
		}
	}
	f, err = lk.ServerFacts(ctx)
	if err != nil || len(f) != 1 || f[0].MaxMemory != 4<<20 || f[0].Policy != "allkeys-lru" || !f[0].Evicting() || f[0].EvictedKeys == 0 {
		t.Fatalf("after filling 12.5 MB into 4 MB: ServerFacts = %+v, %v", f, err)
	}
}
