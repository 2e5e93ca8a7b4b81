package reliability

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/reliability/faults"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

func newLocker(t testing.TB, pool *redis.Pool, opts ...locker.Option) *locker.Locker {
	t.Helper()
	lk, err := locker.New(redigo.New(pool), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// newRedlock is a Redlock Locker over pools (one redigo driver each),
// closed when the test ends.
func newRedlock(t testing.TB, pools []*redis.Pool, opts ...locker.Option) *locker.Locker {
	t.Helper()
	ds := make([]driver.Driver, len(pools))
	for i, p := range pools {
		ds[i] = redigo.New(p)
	}
	lk, err := locker.NewRedlock(ds, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// eventually polls cond every few milliseconds until it holds, or fails the
// test after within.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Within(t, within, what, cond)
}

// within fails the test unless ch delivers within d, and returns the value.
func within[T any](t testing.TB, d time.Duration, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("not within %v: %s", d, what)
		panic("unreachable")
	}
}

func exists(t testing.TB, srv faults.Doer, keys ...string) int64 {
	t.Helper()
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	n, err := redis.Int64(srv.Do("EXISTS", args...))
	if err != nil {
		t.Fatalf("EXISTS %v: %v", keys, err)
	}
	return n
}

// lockKeys are the Redis keys of lock name under the default prefix.
func lockKeys(name string) []string {
	k := "locktag:{" + name + "}"
	return []string{k, k + ":q"}
}

// owner returns the owner token stored for lock name, or "".
func owner(t testing.TB, srv faults.Doer, name string) string {
	t.Helper()
	v, err := redis.String(srv.Do("GET", "locktag:{"+name+"}"))
	if err != nil {
		return ""
	}
	f := strings.Fields(v)
	return f[0]
}

// holderTokens lists the owner tokens holding lock name of the kind whose
// keys end in suffix ("" a mutex, ":s" a semaphore, ":rw" a read/write
// lock).
func holderTokens(t testing.TB, srv faults.Doer, name, suffix string) []string {
	t.Helper()
	if suffix == "" {
		return []string{owner(t, srv, name)}
	}
	hs, err := redis.Strings(srv.Do("ZRANGE", "locktag:{"+name+"}"+suffix, 0, -1))
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

// commandCalls is the total of calls= over INFO commandstats, leaving out
// the commands the test itself sends (info, config, exists, get, ...).
func commandCalls(t testing.TB, srv faults.Doer) map[string]int {
	t.Helper()
	info, err := redis.String(srv.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_")
		if !ok {
			continue
		}
		name, stats, _ := strings.Cut(rest, ":")
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		n, _ := strconv.Atoi(calls)
		base, _, _ := strings.Cut(name, "|") // Redis 7: "config|resetstat"
		switch base {
		case "info", "config", "exists", "get", "ping", "keys", "scan", "dbsize", "acl", "auth", "hello", "client":
			continue
		}
		out[name] = n
	}
	return out
}

// resetStats zeroes INFO commandstats.
func resetStats(t testing.TB, srv faults.Doer) {
	t.Helper()
	if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
}

// startWorker starts a worker child with e and feeds its output into c;
// the returned channel is closed when the child said DONE or exited.
func startWorker(t testing.TB, e childEnv, c *collector) (*faults.Child, <-chan struct{}) {
	t.Helper()
	ch := faults.StartChild(t, "worker", e.env()...)
	ch.Expect("READY", 30*time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for l := range ch.Lines() {
			if l == "DONE" {
				return
			}
			c.line(l)
		}
	}()
	return ch, done
}

// runGoroutines runs one work per locker, each in its own goroutine, and
// waits for all.
func runGoroutines(ctx context.Context, lockers []*locker.Locker, res resource, c *collector, mk func(i int) work) {
	var wg sync.WaitGroup
	for i, lk := range lockers {
		w := mk(i)
		wg.Go(func() { w.run(ctx, lk, res, c.emit, c.errs.add) })
	}
	wg.Wait()
}

// separatePools returns n Lockers on n pools to srv, as n processes would
// have, with opts.
func separatePools(t testing.TB, srv *redistest.Server, n int, opts ...locker.Option) []*locker.Locker {
	out := make([]*locker.Locker, n)
	for i := range out {
		out[i] = newLocker(t, srv.Pool(t), opts...)
	}
	return out
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
