// Package lockertest holds the test helpers that package locker's tests
// and its drivers' tests share: the mutual-exclusion workload with its
// overlap detector, and small waits and reads on a real redis-server.
package lockertest

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

// NewLocker returns a Locker on srv with the default redigo driver
// (pipelined), closed at the test's end.
func NewLocker(t testing.TB, srv *redistest.Server, opts ...locker.Option) *locker.Locker {
	t.Helper()
	return NewLockerOn(t, redigo.New(srv.Pool(t)), opts...)
}

// NewPipelined is NewLocker with the redigo driver pipelining over conns
// connections (0: pooled calls).
func NewPipelined(t testing.TB, srv *redistest.Server, conns int, opts ...locker.Option) *locker.Locker {
	t.Helper()
	return NewLockerOn(t, redigo.New(srv.Pool(t), redigo.WithPipelining(conns)), opts...)
}

// NewLockerOn returns a single-node Locker on d, closed at the test's end.
func NewLockerOn(t testing.TB, d driver.Driver, opts ...locker.Option) *locker.Locker {
	t.Helper()
	lk, err := locker.New(d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// Workload runs workers goroutines spread over lockers, each taking the
// lock "hot" iters times around a read-then-write of a shared counter. It
// returns the most holders seen at once (an overlap detector: 1 for a
// working lock) and the updates lost to overlapping sections.
func Workload(t *testing.T, lockers []*locker.Locker, workers, iters int) (maxHolders int32, lost int64) {
	t.Helper()
	var holders, peak atomic.Int32
	var counter atomic.Int64 // read, then written: updates are lost if sections overlap
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		lk := lockers[w%len(lockers)]
		wg.Go(func() {
			for range iters {
				le, err := lk.Obtain(context.Background(), "hot", locker.Params{TTL: 10 * time.Second, Wait: time.Minute})
				if err != nil {
					errs <- err
					return
				}
				h := holders.Add(1)
				for p := peak.Load(); h > p && !peak.CompareAndSwap(p, h); p = peak.Load() {
				}
				v := counter.Load()
				time.Sleep(50 * time.Microsecond) // the critical section's work
				counter.Store(v + 1)
				holders.Add(-1)
				if err := le.Release(context.Background()); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return peak.Load(), int64(workers*iters) - counter.Load()
}

// MustObtain obtains key or fails the test.
func MustObtain(t *testing.T, lk *locker.Locker, ctx context.Context, key string, p locker.Params) *locker.Lease {
	t.Helper()
	le, err := lk.Obtain(ctx, key, p)
	if err != nil {
		t.Fatalf("Obtain(%q): %v", key, err)
	}
	return le
}

// GoroutinesSettle waits until the goroutine count is back to base.
func GoroutinesSettle(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines: %d, baseline %d\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, not synchronising
	}
}

// IntReply runs cmd on srv and returns its integer reply.
func IntReply(t *testing.T, srv *redistest.Server, cmd string, args ...any) int64 {
	t.Helper()
	n, err := redis.Int64(srv.Do(cmd, args...))
	if err != nil {
		t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return n
}

// LockState reads the owner token and hold count stored for key's mutex
// under the default prefix ("", 0: not held).
func LockState(t *testing.T, srv *redistest.Server, key string) (owner string, holds int) {
	t.Helper()
	v, err := redis.String(srv.Do("GET", "locktag:{"+key+"}"))
	if err != nil {
		return "", 0
	}
	f := strings.Fields(v)
	holds, _ = strconv.Atoi(f[2])
	return f[0], holds
}
