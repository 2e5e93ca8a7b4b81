package redigo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

// TestPipelinedMutualExclusion: the mutual-exclusion workload with Lockers
// of every connection mode on the same keys (pooled calls, one and two
// pipelined connections) never overlaps and loses no update; the control
// with disjoint prefixes does.
func TestPipelinedMutualExclusion(t *testing.T) {
	srv := redistest.Start(t)
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("broken=%t", broken), func(t *testing.T) {
			var lockers []*locker.Locker
			for i := range 4 {
				var opts []locker.Option
				if broken {
					opts = append(opts, locker.WithKeyPrefix(fmt.Sprintf("broken%d:", i)))
				}
				lockers = append(lockers, newPipelined(t, srv, i%3, opts...))
			}
			peak, lost := lockertest.Workload(t, lockers, 64, 16)
			switch {
			case !broken && (peak != 1 || lost != 0):
				t.Fatalf("mutual exclusion broken: %d holders at once, %d lost updates", peak, lost)
			case broken && (peak < 2 || lost == 0):
				t.Fatalf("detector missed a broken lock: %d holders at once, %d lost updates", peak, lost)
			}
		})
	}
}

// TestPipelinedConcurrentCalls: many goroutines share one pipelined
// connection; every call gets its own reply (a reply matched to the wrong
// call would hand a lease a stranger's fence or fail a release).
func TestPipelinedConcurrentCalls(t *testing.T) {
	srv := redistest.Start(t)
	lk := newPipelined(t, srv, 1)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			key := "k" + strconv.Itoa(w)
			var last int64
			for range 50 {
				le, err := lk.Obtain(ctx, key, locker.Params{TTL: 10 * time.Second})
				if err != nil {
					t.Error(err)
					return
				}
				if le.Token() <= last {
					t.Errorf("%s: fence %d after %d", key, le.Token(), last)
				}
				last = le.Token()
				if le.Key() != key || le.Holds() != 1 {
					t.Errorf("lease of %q with %d holds, want %q with 1", le.Key(), le.Holds(), key)
				}
				if err := le.Release(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestPipelinedSlowServer: a reply later than the call's deadline breaks the
// pipelined connection and fails the call with ErrUnavailable instead of
// hanging; once the server answers again a new connection is dialled.
func TestPipelinedSlowServer(t *testing.T) {
	srv := redistest.Start(t)
	lk := newPipelined(t, srv, 1, locker.WithCallTimeout(200*time.Millisecond))
	ctx := context.Background()
	if err := lk.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("CLIENT", "PAUSE", 1500); err != nil {
		t.Fatal(err)
	}
	_, err := lk.Obtain(ctx, "slow", locker.Params{TTL: time.Second})
	if !errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("Obtain during a pause: %v, want ErrUnavailable", err)
	}
	var le *locker.Lease
	testwait.Within(t, 10*time.Second, "obtain after the pause", func() bool {
		le, err = lk.Obtain(ctx, "slow", locker.Params{TTL: time.Second})
		return err == nil
	})
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPipelinedConnectionKilled: the server drops the pipelined connection;
// the locker dials a new one and a lease obtained before still releases.
func TestPipelinedConnectionKilled(t *testing.T) {
	srv := redistest.Start(t)
	lk := newPipelined(t, srv, 1)
	ctx := context.Background()
	le := lockertest.MustObtain(t, lk, ctx, "killed", locker.Params{TTL: 10 * time.Second})
	if _, err := srv.Do("CLIENT", "KILL", "TYPE", "normal"); err != nil {
		t.Fatal(err)
	}
	testwait.Within(t, 10*time.Second, "calls work again", func() bool { return lk.Ping(ctx) == nil })
	if err := le.Release(ctx); err != nil {
		t.Fatalf("release after the connection was killed: %v", err)
	}
	if owner, _ := lockertest.LockState(t, srv, "killed"); owner != "" {
		t.Fatal("lock still held")
	}
}

// TestPipelinedNoScript: after SCRIPT FLUSH the pipelined driver falls back
// to EVAL like the pooled one.
func TestPipelinedNoScript(t *testing.T) {
	srv := redistest.Start(t)
	lk := newPipelined(t, srv, 1)
	ctx := context.Background()
	lockertest.MustObtain(t, lk, ctx, "a", locker.Params{TTL: time.Second}).Release(ctx)
	if _, err := srv.Do("SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	le := lockertest.MustObtain(t, lk, ctx, "b", locker.Params{TTL: time.Second})
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestPipelinedClose: Close fails later calls (nothing hangs) and leaves no
// goroutine behind.
func TestPipelinedClose(t *testing.T) {
	srv := redistest.Start(t)
	base := runtime.NumGoroutine()
	lk, err := locker.New(redigo.New(srv.Pool(t), redigo.WithPipelining(2)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	lockertest.MustObtain(t, lk, ctx, "a", locker.Params{TTL: time.Second}).Release(ctx)
	if err := lk.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := lk.Obtain(ctx, "a", locker.Params{TTL: time.Second}); !errors.Is(err, locker.ErrClosed) {
		t.Fatalf("Obtain after Close: %v, want ErrClosed", err)
	}
	lockertest.GoroutinesSettle(t, base)
}

// TestPipelinedChaos: callers with random short deadlines share pipelined
// connections that the server keeps killing. Every call ends (no hang),
// every lease obtained is the one Redis records for its key (a reply matched
// to the wrong call would show another key's fence), and once the chaos
// stops nothing is left behind and no goroutine lingers.
func TestPipelinedChaos(t *testing.T) {
	srv := redistest.Start(t)
	base := runtime.NumGoroutine()
	lk := newPipelined(t, srv, 2, locker.WithCallTimeout(300*time.Millisecond))
	stop := make(chan struct{})
	var killer sync.WaitGroup
	killer.Go(func() {
		tick := time.NewTicker(40 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_, _ = srv.Do("CLIENT", "KILL", "TYPE", "normal")
			}
		}
	})
	var wg sync.WaitGroup
	var obtained, failed atomic.Int64
	for w := range 24 {
		wg.Go(func() {
			key := "chaos" + strconv.Itoa(w)
			for i := range 60 {
				limit := time.Second
				if i%3 != 0 {
					limit = time.Duration(50+rand.IntN(3000)) * time.Microsecond
				}
				ctx, cancel := context.WithTimeout(context.Background(), limit)
				le, err := lk.Obtain(ctx, key, locker.Params{TTL: 5 * time.Second})
				cancel()
				if err != nil {
					if !errors.Is(err, locker.ErrNotObtained) && !errors.Is(err, locker.ErrUnavailable) {
						t.Errorf("%s: unexpected error %v", key, err)
					}
					failed.Add(1)
					continue
				}
				obtained.Add(1)
				if v, err := redis.String(srv.Do("GET", "locktag:{"+key+"}")); err == nil {
					if f := strings.Fields(v); len(f) < 2 || f[1] != strconv.FormatInt(le.Token(), 10) {
						t.Errorf("%s: lease fence %d, Redis holds %q", key, le.Token(), v)
					}
				}
				_ = le.Release(context.Background())
			}
		})
	}
	wg.Wait()
	close(stop)
	killer.Wait()
	t.Logf("obtained %d, failed %d", obtained.Load(), failed.Load())
	if obtained.Load() == 0 {
		t.Fatal("nothing obtained: the chaos left no working path")
	}
	// Leftovers of lost replies are cleaned up by token or expire with the
	// TTL; a lease still held in Redis is released by the next call's abandon.
	testwait.Within(t, 15*time.Second, "no lock left behind", func() bool {
		for w := range 24 {
			if lockertest.IntReply(t, srv, "EXISTS", "locktag:{chaos"+strconv.Itoa(w)+"}") != 0 {
				return false
			}
		}
		return true
	})
	if err := lk.Close(); err != nil {
		t.Fatal(err)
	}
	lockertest.GoroutinesSettle(t, base)
}

// TestPipelinedIgnoresPoolExhaustion: with the pipelined default the pool
// only dials, so request traffic holding every pooled connection (MaxActive
// reached) neither fails requests with ErrPoolExhausted nor starves a held
// lock's renewals and release — what the reserved connection guarantees
// for pooled calls (TestRenewalSurvivesPoolExhaustion).
func TestPipelinedIgnoresPoolExhaustion(t *testing.T) {
	srv := redistest.Start(t)
	pool := srv.Pool(t)
	pool.MaxActive = 2
	lk := newLockerOn(t, redigo.New(pool), locker.WithWatchdog(time.Second, 100*time.Millisecond))
	ctx := context.Background()
	le := lockertest.MustObtain(t, lk, ctx, "starved", locker.Params{})
	busy := []redis.Conn{pool.Get(), pool.Get()} // the traffic: every pooled connection taken
	defer func() {
		for _, c := range busy {
			c.Close()
		}
	}()
	if _, err := busy[0].Do("PING"); err != nil {
		t.Fatal(err)
	}
	other, err := lk.Obtain(ctx, "other", locker.Params{TTL: time.Second})
	if err != nil {
		t.Fatalf("a request with the pool exhausted: %v", err)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-le.Context().Done():
		t.Fatalf("lock lost while the pool was exhausted: %v", context.Cause(le.Context()))
	case <-time.After(2500 * time.Millisecond): // two and a half leases
	}
	if err := le.Release(ctx); err != nil {
		t.Fatalf("release with the pool exhausted: %v", err)
	}
	if n := lockertest.IntReply(t, srv, "EXISTS", "locktag:{starved}"); n != 0 {
		t.Fatal("lock key left after release")
	}
}

// TestPipelinedIdleTimeout: a pipelined connection left idle for the
// pool's IdleTimeout is replaced before the next call, as the pool would
// replace an idle connection: a server timeout (here Redis's own, as a
// proxy's idle cut-off would do) that closed it meanwhile costs no call.
// The control, without IdleTimeout, shows the server really cut it: the
// first call after the cut fails.
func TestPipelinedIdleTimeout(t *testing.T) {
	for _, idle := range []time.Duration{200 * time.Millisecond, 0} {
		t.Run(fmt.Sprintf("IdleTimeout=%v", idle), func(t *testing.T) {
			srv := redistest.Start(t)
			pool := srv.Pool(t)
			pool.IdleTimeout = idle
			lk := newLockerOn(t, redigo.New(pool))
			ctx := context.Background()
			if err := lk.Ping(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.Do("CONFIG", "SET", "timeout", "1"); err != nil {
				t.Fatal(err)
			}
			testwait.Within(t, 10*time.Second, "the server closed the idle connection", func() bool {
				list, err := redis.String(srv.Do("CLIENT", "LIST"))
				if err != nil {
					t.Fatal(err)
				}
				// Only this CLIENT LIST's own connection is left.
				return strings.Count(strings.TrimSpace(list), "\n") == 0
			})
			if _, err := srv.Do("CONFIG", "SET", "timeout", "0"); err != nil {
				t.Fatal(err)
			}
			err := lk.Ping(ctx)
			switch {
			case idle > 0 && err != nil:
				t.Fatalf("first call after an idle period: %v", err)
			case idle == 0 && !errors.Is(err, locker.ErrUnavailable):
				t.Fatalf("control: first call on the cut connection: %v, want ErrUnavailable", err)
			}
			if err := lk.Ping(ctx); err != nil {
				t.Fatalf("second call: %v", err)
			}
		})
	}
}

func newPipelined(t testing.TB, srv *redistest.Server, conns int, opts ...locker.Option) *locker.Locker {
	t.Helper()
	return lockertest.NewPipelined(t, srv, conns, opts...)
}

func newLockerOn(t testing.TB, d driver.Driver, opts ...locker.Option) *locker.Locker {
	t.Helper()
	return lockertest.NewLockerOn(t, d, opts...)
}
