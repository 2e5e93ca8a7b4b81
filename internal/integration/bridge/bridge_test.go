package bridge

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	redigo "github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	lockredigo "github.com/locktag/locktag/locker/redigo"
)

// occupancy is an exact detector: every critical section raises one
// Redis counter on its own connection and lowers it after; a raise that
// finds it above 1 is an overlap.
type occupancy struct {
	pool     *redigo.Pool
	overlaps atomic.Int64
	sections sync.Map // who -> *atomic.Int64
}

func (o *occupancy) section(t *testing.T, who string) {
	c := o.pool.Get()
	defer c.Close()
	n, err := redigo.Int(c.Do("INCR", "occupancy"))
	if err != nil {
		t.Error(err)
		return
	}
	if n > 1 {
		o.overlaps.Add(1)
	}
	time.Sleep(300 * time.Microsecond) // the work; not synchronisation
	if _, err := c.Do("DECR", "occupancy"); err != nil {
		t.Error(err)
	}
	v, _ := o.sections.LoadOrStore(who, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

func (o *occupancy) count(who string) int64 {
	v, ok := o.sections.Load(who)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

// run has locktag (bridged when bridge), redsync and redislock workers
// lock the name "acct" for d, and returns the detector.
func run(t *testing.T, bridge bool, d time.Duration) *occupancy {
	srv := redistest.Start(t)
	occ := &occupancy{pool: srv.Pool(t)}
	var opts []locker.Option
	if bridge {
		opts = append(opts, locker.WithPlainLockBridge(nil))
	}
	lk, err := locker.New(lockredigo.New(srv.Pool(t)), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	rs := redsync.New(redsyncredigo.NewPool(srv.Pool(t)))
	rc := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rc.Close() })
	rl := redislock.New(rc)

	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() { // locktag
			for ctx.Err() == nil {
				le, err := lk.Obtain(ctx, "acct", locker.Params{TTL: 2 * time.Second, Wait: time.Second})
				if err != nil {
					if !errors.Is(err, locker.ErrNotObtained) {
						t.Errorf("locktag %d: %v", i, err)
					}
					continue
				}
				occ.section(t, "locktag")
				if err := le.Release(context.Background()); err != nil {
					t.Errorf("locktag release: %v", err)
				}
				time.Sleep(time.Millisecond) // pacing, as the plain lockers' retry delay; not synchronisation
			}
		})
		wg.Go(func() { // redsync: its defaults, a 2s expiry
			for ctx.Err() == nil {
				m := rs.NewMutex("acct", redsync.WithExpiry(2*time.Second), redsync.WithTries(1<<20),
					redsync.WithRetryDelay(2*time.Millisecond))
				if err := m.LockContext(ctx); err != nil {
					continue
				}
				occ.section(t, "redsync")
				if _, err := m.UnlockContext(context.Background()); err != nil {
					t.Errorf("redsync unlock: %v", err)
				}
			}
		})
		wg.Go(func() { // redislock, retrying every 2ms
			for ctx.Err() == nil {
				l, err := rl.Obtain(ctx, "acct", 2*time.Second, &redislock.Options{RetryStrategy: redislock.LinearBackoff(2 * time.Millisecond)})
				if err != nil {
					continue
				}
				occ.section(t, "redislock")
				if err := l.Release(context.Background()); err != nil {
					t.Errorf("redislock release: %v", err)
				}
			}
		})
	}
	wg.Wait()
	return occ
}

// TestBridgeExcludesPlainLockers: with the bridge, locktag, redsync and
// redislock workers locking one name never overlap, and locktag and the
// plain lockers each get the lock; without it (the control) locktag does
// not see the plain lock and the detector sees overlaps.
//
// Under constant contention one side tends to keep the lock for a whole
// run (locktag's queue hands it from one locktag waiter to the next; the
// plain lockers, polling every 2 ms, retake it before a locktag waiter's
// next look), so the bridged runs repeat, up to three, until both sides
// have held it; every run must be free of overlaps.
func TestBridgeExcludesPlainLockers(t *testing.T) {
	var own, plain int64
	for round := 1; round <= 3 && (own == 0 || plain == 0); round++ {
		occ := run(t, true, 2*time.Second)
		for _, who := range []string{"locktag", "redsync", "redislock"} {
			t.Logf("bridged, run %d: %s ran %d critical sections", round, who, occ.count(who))
		}
		if n := occ.overlaps.Load(); n != 0 {
			t.Fatalf("with the bridge: %d overlapping critical sections", n)
		}
		own += occ.count("locktag")
		plain += occ.count("redsync") + occ.count("redislock")
	}
	if own == 0 || plain == 0 {
		t.Fatalf("in three runs, locktag ran %d critical sections and the plain lockers %d: one side never got the lock", own, plain)
	}

	control := run(t, false, 2*time.Second)
	if control.overlaps.Load() == 0 {
		t.Fatal("without the bridge the detector saw no overlap: the test cannot tell")
	}
	t.Logf("without the bridge (the control): %d overlapping critical sections", control.overlaps.Load())
}
