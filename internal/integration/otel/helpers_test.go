package otel_test

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
	"github.com/locktag/locktag/locker/redigo"
)

func newLocker(t testing.TB, srv *redistest.Server, opts ...locker.Option) *locker.Locker {
	t.Helper()
	lk, err := locker.New(redigo.New(srv.Pool(t)), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

func mustObtain(t *testing.T, lk *locker.Locker, ctx context.Context, key string, p locker.Params) *locker.Lease {
	t.Helper()
	le, err := lk.Obtain(ctx, key, p)
	if err != nil {
		t.Fatalf("Obtain(%q): %v", key, err)
	}
	return le
}

// lockState reads the owner token stored for key.
func lockState(t *testing.T, srv *redistest.Server, key string) (owner string, holds int) {
	t.Helper()
	v, err := redis.String(srv.Do("GET", "locktag:{"+key+"}"))
	if err != nil {
		return "", 0
	}
	f := strings.Fields(v)
	holds, _ = strconv.Atoi(f[2])
	return f[0], holds
}

// checkForced fails unless le's context was cancelled by a force-release
// naming reason.
func checkForced(t *testing.T, le *locker.Lease, reason string) {
	t.Helper()
	select {
	case <-le.Context().Done():
	case <-time.After(testwait.Timeout):
		t.Fatal("holder's context not cancelled after the force-release")
	}
	cause := context.Cause(le.Context())
	if !errors.Is(cause, locker.ErrForceReleased) || !strings.Contains(cause.Error(), "force-released: "+reason) {
		t.Fatalf("cause %v, want ErrForceReleased naming %q", cause, reason)
	}
}

// eventually polls cond until it holds, or fails the test after within.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Within(t, within, what, cond)
}
