package locker_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
)

// TestRedlockReenterLostRound: a re-entry round that a majority of masters
// did not answer in time (frozen) fails and is undone on every master it
// may have reached, the frozen ones included: once they run the re-entry
// late, the undo (queued behind it on the same pipelined connection) takes
// it back. A retried re-entry then counts two holds, not three, and the
// last release frees the lock everywhere.
func TestRedlockReenterLostRound(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	lk := newRedlockPiped(t, srvs, 1, locker.WithNodeTimeout(100*time.Millisecond), locker.WithCallTimeout(300*time.Millisecond))
	ctx := context.Background()
	// Every master has the release script loaded, so that the undo sent
	// to a frozen master needs no NOSCRIPT round trip after its deadline.
	if err := mustObtain(t, lk, ctx, "warm", locker.Params{TTL: time.Second}).Release(ctx); err != nil {
		t.Fatal(err)
	}
	le := mustObtain(t, lk, ctx, "r", locker.Params{TTL: 20 * time.Second})
	frozen := srvs[:3]
	for _, s := range frozen {
		s.Freeze()
	}
	_, err := lk.Obtain(le.Context(), "r", locker.Params{})
	for _, s := range frozen {
		s.Thaw()
	}
	if !errors.Is(err, locker.ErrQuorum) {
		t.Fatalf("re-entry with 3 of 5 masters frozen: %v, want ErrQuorum", err)
	}

	// The frozen masters run what was queued for them: poll until every
	// master reports the outer hold alone.
	testwait.Within(t, 5*time.Second, "hold counts back to 1", func() bool {
		for _, s := range srvs {
			if holdsOn(t, s, "r") != 1 {
				return false
			}
		}
		return true
	})
	inner, err := lk.Obtain(le.Context(), "r", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	if inner.Holds() != 2 {
		t.Fatalf("retried re-entry: holds %d, want 2", inner.Holds())
	}
	for _, l := range []*locker.Lease{inner, le} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := keyOn(t, srvs, "r"); got != 0 {
		t.Fatalf("lock left on %d masters after the last release", got)
	}
}

// holdsOn is the hold count of key's mutex on s (0: not held), read from
// the lock's value: "owner fence holds ...".
func holdsOn(t *testing.T, s *redistest.Server, key string) int {
	t.Helper()
	v, err := redis.String(s.Do("GET", "locktag:{"+key+"}"))
	if errors.Is(err, redis.ErrNil) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(v)
	if len(f) < 3 {
		t.Fatalf("lock value %q", v)
	}
	holds, err := strconv.Atoi(f[2])
	if err != nil {
		t.Fatalf("lock value %q: %v", v, err)
	}
	return holds
}
