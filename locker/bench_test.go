package locker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// benchLock is what the benchmarks compare: locktag and the baselines.
type benchLock interface {
	lock(ctx context.Context, key string) (unlocker, error)
}

// unlocker releases what lock took. A lease is its own unlocker (a pointer
// in an interface: no allocation), so the allocation counts are the
// library's; the baselines return closures (unlockFunc).
type unlocker interface{ unlock() }

type unlockFunc func()

func (f unlockFunc) unlock() { f() }

type locktagLock struct{ lk *locker.Locker }

// leaseUnlocker releases a lease with a background context.
type leaseUnlocker locker.Lease

func (u *leaseUnlocker) unlock() { _ = (*locker.Lease)(u).Release(context.Background()) }

func (l locktagLock) lock(ctx context.Context, key string) (unlocker, error) {
	le, err := l.lk.Obtain(ctx, key, locker.Params{TTL: 10 * time.Second, Wait: time.Minute})
	if err != nil {
		return nil, err
	}
	return (*leaseUnlocker)(le), nil
}

// seedLock is the approach of the articles locktag replaces: SET NX PX,
// retry after a 5ms sleep while busy, release by a Lua compare-and-delete.
type seedLock struct {
	pool *redis.Pool
	n    atomic.Int64
}

var seedUnlock = luaScript(1, `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

func (s *seedLock) lock(ctx context.Context, key string) (unlocker, error) {
	token := fmt.Sprint(s.n.Add(1))
	for {
		c := s.pool.Get()
		ok, err := redis.String(c.Do("SET", key, token, "NX", "PX", 10000))
		c.Close()
		if err == nil && ok == "OK" {
			return unlockFunc(func() {
				c := s.pool.Get()
				defer c.Close()
				_, _ = seedUnlock.Do(c, key, token)
			}), nil
		}
		if err != nil && !errors.Is(err, redis.ErrNil) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// setDelRef is not a lock: a SET and a DEL, the two-round-trip floor.
type setDelRef struct{ pool *redis.Pool }

func (r setDelRef) lock(_ context.Context, key string) (unlocker, error) {
	c := r.pool.Get()
	_, err := c.Do("SET", key, "x", "PX", 10000)
	c.Close()
	return unlockFunc(func() {
		c := r.pool.Get()
		defer c.Close()
		_, _ = c.Do("DEL", key)
	}), err
}

func benchSubjects(b *testing.B, srv *redistest.Server) []struct {
	name string
	l    benchLock
} {
	lk := newLocker(b, srv) // the default: pipelined
	pl := newPipelined(b, srv, 0)
	return []struct {
		name string
		l    benchLock
	}{
		{"locktag", locktagLock{lk}},
		{"locktag-pooled", locktagLock{pl}},
		{"seed-sleep-retry", &seedLock{pool: srv.Pool(b)}},
		{"set-del-reference", setDelRef{srv.Pool(b)}},
	}
}

// BenchmarkRoundTrip is one PING: the unit the other numbers are read in.
func BenchmarkRoundTrip(b *testing.B) {
	srv := redistest.Start(b)
	pool := srv.Pool(b)
	c := pool.Get()
	defer c.Close()
	for b.Loop() {
		if _, err := c.Do("PING"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUncontended: lock and unlock a key nobody else wants.
func BenchmarkUncontended(b *testing.B) {
	srv := redistest.Start(b)
	for _, s := range benchSubjects(b, srv) {
		b.Run(s.name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				u, err := s.l.lock(ctx, "u")
				if err != nil {
					b.Fatal(err)
				}
				u.unlock()
			}
		})
	}
}

// BenchmarkUncontendedParallel: 16 goroutines (8 per core on the CI
// machine), each locking and unlocking its own key; ns/op is per pair.
func BenchmarkUncontendedParallel(b *testing.B) {
	srv := redistest.Start(b)
	for _, s := range benchSubjects(b, srv) {
		b.Run(s.name, func(b *testing.B) {
			ctx := context.Background()
			var n atomic.Int64
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				key := "p" + strconv.FormatInt(n.Add(1), 10)
				for pb.Next() {
					u, err := s.l.lock(ctx, key)
					if err != nil {
						b.Error(err)
						return
					}
					u.unlock()
				}
			})
		})
	}
}

// BenchmarkHotKey: c goroutines take turns on one key with an empty critical
// section. ns/op is per critical section. handoff-p50/p99 is the time from
// the start of a release to the return of the lock call of a *different*
// goroutine (a goroutine that re-takes its own lock is no hand-over);
// fairness is the fewest critical sections any goroutine got divided by the
// most (1 = perfectly fair); redis-script-µs/op is Redis's time in scripts
// (their commands included) per critical section, from INFO commandstats.
func BenchmarkHotKey(b *testing.B) {
	srv := redistest.Start(b)
	for _, s := range benchSubjects(b, srv)[:2] {
		for _, c := range []int{2, 16, 64} {
			b.Run(fmt.Sprintf("%s/c=%d", s.name, c), func(b *testing.B) {
				ctx := context.Background()
				var mu sync.Mutex // guards the fields below; taken inside the lock only
				var gaps []time.Duration
				var released time.Time
				lastHolder := -1
				counts := make([]int, c)
				var left atomic.Int64
				left.Store(int64(b.N))
				var wg sync.WaitGroup
				_, usec0 := commandUsec(b, srv, "evalsha")
				b.ResetTimer()
				for w := range c {
					wg.Go(func() {
						for left.Add(-1) >= 0 {
							u, err := s.l.lock(ctx, "hot")
							if err != nil {
								b.Error(err)
								return
							}
							mu.Lock()
							if lastHolder >= 0 && lastHolder != w {
								gaps = append(gaps, time.Since(released))
							}
							counts[w]++
							lastHolder, released = w, time.Now()
							mu.Unlock()
							u.unlock()
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				_, usec := commandUsec(b, srv, "evalsha")
				b.ReportMetric(float64(usec-usec0)/float64(b.N), "redis-script-µs/op")
				if len(gaps) > 0 {
					slices.Sort(gaps)
					b.ReportMetric(float64(gaps[len(gaps)/2].Microseconds()), "handoff-p50-µs")
					b.ReportMetric(float64(gaps[len(gaps)*99/100].Microseconds()), "handoff-p99-µs")
				}
				if hi := slices.Max(counts); hi > 0 {
					b.ReportMetric(float64(slices.Min(counts))/float64(hi), "fairness")
				}
			})
		}
	}
}

// BenchmarkRedlock: lock+unlock of an uncontended key on one master and on
// a 5-master Redlock in the same run. The fan-out is parallel, so Redlock
// should cost about one master's round trips plus the fence write-back.
func BenchmarkRedlock(b *testing.B) {
	srvs := redistest.StartN(b, 5)
	pools := make([]*redis.Pool, len(srvs))
	for i, s := range srvs {
		pools[i] = s.Pool(b)
	}
	// The machine's cost of a parallel round to 5 servers, for reading the
	// Redlock numbers: one PING to one server, and one to each of 5 at once.
	for _, n := range []int{1, 5} {
		b.Run(fmt.Sprintf("ping-%d", n), func(b *testing.B) {
			for b.Loop() {
				var wg sync.WaitGroup
				for _, p := range pools[:n] {
					wg.Go(func() {
						c := p.Get()
						defer c.Close()
						if _, err := c.Do("PING"); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
		})
	}
	for _, tc := range []struct {
		name string
		lk   *locker.Locker
	}{
		{"single", newLockerOn(b, redigo.New(pools[0]))},
		{"redlock-5", newRedlockOn(b, pools, nil)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			defer tc.lk.Close()
			ctx := context.Background()
			for b.Loop() {
				le, err := tc.lk.Obtain(ctx, "bench", locker.Params{TTL: 10 * time.Second})
				if err != nil {
					b.Fatal(err)
				}
				if err := le.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkUncontendedCPU: c goroutines, each locking and unlocking its own
// key, with the CPU time per pair of this process and of redis-server,
// each split into user and kernel (system) time, from /proc/<pid>/stat
// (Linux; 10 ms ticks, so give it a few seconds: -benchtime 5s).
// ns/op is wall time per pair across all goroutines.
func BenchmarkUncontendedCPU(b *testing.B) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		b.Skip("needs /proc")
	}
	srv := redistest.Start(b)
	c := srv.Pool(b).Get()
	info, err := redis.String(c.Do("INFO", "server"))
	c.Close()
	if err != nil {
		b.Fatal(err)
	}
	var redisPid string
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			redisPid = v
		}
	}
	for _, s := range benchSubjects(b, srv) {
		for _, c := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/c=%d", s.name, c), func(b *testing.B) {
				ctx := context.Background()
				var left atomic.Int64
				left.Store(int64(b.N))
				cu, cs := cpuTicks(b, "self")
				ru, rs := cpuTicks(b, redisPid)
				b.ResetTimer()
				var wg sync.WaitGroup
				for w := range c {
					wg.Go(func() {
						key := "cpu" + strconv.Itoa(w)
						for left.Add(-1) >= 0 {
							u, err := s.l.lock(ctx, key)
							if err != nil {
								b.Error(err)
								return
							}
							u.unlock()
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				cu2, cs2 := cpuTicks(b, "self")
				ru2, rs2 := cpuTicks(b, redisPid)
				per := func(ticks float64) float64 { return ticks * 1e4 / float64(b.N) } // 10 ms ticks -> µs per pair
				b.ReportMetric(per(cu2-cu), "client-user-µs/op")
				b.ReportMetric(per(cs2-cs), "client-sys-µs/op")
				b.ReportMetric(per(ru2-ru), "redis-user-µs/op")
				b.ReportMetric(per(rs2-rs), "redis-sys-µs/op")
			})
		}
	}
}

// cpuTicks returns the user and system CPU time of process pid ("self":
// this one) in clock ticks (1/100 s on Linux).
func cpuTicks(b *testing.B, pid string) (user, sys float64) {
	b.Helper()
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	s := string(raw)
	// Fields after the command name in parentheses: state is the first;
	// utime and stime are the 12th and 13th (proc(5): fields 14 and 15).
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		b.Fatalf("/proc/%s/stat: %q", pid, s)
	}
	user, _ = strconv.ParseFloat(f[11], 64)
	sys, _ = strconv.ParseFloat(f[12], 64)
	return user, sys
}
