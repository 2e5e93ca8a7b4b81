package otel_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
)

func newLocker(t testing.TB, srv *redistest.Server, opts ...locker.Option) *locker.Locker {
	t.Helper()
	return lockertest.NewLocker(t, srv, opts...)
}

func mustObtain(t *testing.T, lk *locker.Locker, ctx context.Context, key string, p locker.Params) *locker.Lease {
	t.Helper()
	return lockertest.MustObtain(t, lk, ctx, key, p)
}

// lockState reads the owner token and hold count stored for key.
func lockState(t *testing.T, srv *redistest.Server, key string) (owner string, holds int) {
	t.Helper()
	return lockertest.LockState(t, srv, key)
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
