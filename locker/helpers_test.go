package locker_test

import (
	"context"
	"crypto/fips140"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
)

func newLocker(t testing.TB, srv *redistest.Server, opts ...locker.Option) *locker.Locker {
	t.Helper()
	return lockertest.NewLocker(t, srv, opts...)
}

func newPipelined(t testing.TB, srv *redistest.Server, conns int, opts ...locker.Option) *locker.Locker {
	t.Helper()
	return lockertest.NewPipelined(t, srv, conns, opts...)
}

func newLockerOn(t testing.TB, d driver.Driver, opts ...locker.Option) *locker.Locker {
	t.Helper()
	return lockertest.NewLockerOn(t, d, opts...)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Within(t, within, what, cond)
}

// goroutinesSettle waits until the goroutine count is back to base.
func goroutinesSettle(t *testing.T, base int) { t.Helper(); lockertest.GoroutinesSettle(t, base) }

func intReply(t *testing.T, srv *redistest.Server, cmd string, args ...any) int64 {
	t.Helper()
	return lockertest.IntReply(t, srv, cmd, args...)
}

// queueLen is the number of waiters queued in Redis for key.
func queueLen(t *testing.T, srv *redistest.Server, key string) int64 {
	return intReply(t, srv, "ZCARD", "locktag:{"+key+"}:q")
}

func mustObtain(t *testing.T, lk *locker.Locker, ctx context.Context, key string, p locker.Params) *locker.Lease {
	t.Helper()
	return lockertest.MustObtain(t, lk, ctx, key, p)
}

// commandCalls reads calls=N of cmd from INFO commandstats, less the
// failed ones (an EVALSHA answered NOSCRIPT is retried as EVAL).
func commandCalls(info, cmd string) int {
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":"); ok {
			var calls, failed int
			for _, f := range strings.Split(strings.TrimSpace(rest), ",") {
				k, v, _ := strings.Cut(f, "=")
				switch k {
				case "calls":
					calls, _ = strconv.Atoi(v)
				case "failed_calls":
					failed, _ = strconv.Atoi(v)
				}
			}
			return calls - failed
		}
	}
	return 0
}

// warmListener makes lk open its shared subscriber connection (a wait that
// times out) and subscribe its control channel (its first lease does, in
// the background), so goroutine baselines taken afterwards include them.
func warmListener(t *testing.T, lk *locker.Locker) {
	t.Helper()
	ctx := context.Background()
	le := mustObtain(t, lk, ctx, "warm", locker.Params{})
	if _, err := lk.Obtain(context.WithoutCancel(ctx), "warm", locker.Params{Wait: time.Millisecond}); err == nil {
		t.Fatal("warm-up wait obtained a held lock")
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "control channel subscribed", func() bool { return locker.ControlReady(lk) })
}

// lockState reads the owner token and hold count stored for key.
func lockState(t *testing.T, srv *redistest.Server, key string) (owner string, holds int) {
	t.Helper()
	return lockertest.LockState(t, srv, key)
}

// luaScript is redigo's Script for a test's own Lua. redigo computes its
// SHA1 when it is made, which FIPS 140-only mode refuses; the SHA1 only
// names the script for EVALSHA, so the tests make theirs without that
// enforcement and run in every mode.
func luaScript(keys int, src string) *redis.Script {
	var s *redis.Script
	fips140.WithoutEnforcement(func() { s = redis.NewScript(keys, src) })
	return s
}
