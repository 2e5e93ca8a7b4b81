package job_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/job"
)

// schedule calls run for ticks 0..n-1, tick i at start + i*period + offset:
// one replica's scheduler, whose clock is offset from the others'.
func schedule(start time.Time, period, offset time.Duration, n int, run func(tick int)) {
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i)*period + offset))) // the scheduler's clock, not synchronisation
		run(i)
	}
}

// TestAtLeastSkewedTicks: two replicas schedule the same job every 100ms,
// one of them 30ms late (its clock is behind), and run each tick with
// RunAt. A short run releases its lock before the late replica's tick,
// which then runs the same tick again — the control shows it. With
// WithAtLeast(80ms) the lock is kept until 80ms after the tick, past the
// late replica's; each tick runs exactly once. (WithMisfire's default,
// 40ms, plus the 30ms offset stays below 80ms: a replica stalled past
// that skips the tick instead of running it twice.)
func TestAtLeastSkewedTicks(t *testing.T) {
	srv := redistest.Start(t)
	const period, skew, ticks = 100 * time.Millisecond, 30 * time.Millisecond, 10
	for _, tc := range []struct {
		name string
		opts []job.Option
		once bool
	}{
		{"at-least", []job.Option{job.WithAtLeast(80 * time.Millisecond)}, true},
		{"control-without", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "job:tick:" + tc.name
			var c tally
			var jobs []*job.Job
			for range 2 {
				lk := replica(t, srv)
				if err := lk.Ping(context.Background()); err != nil { // dial before the first tick
					t.Fatal(err)
				}
				j, err := job.New(lk, name, tc.opts...)
				if err != nil {
					t.Fatal(err)
				}
				jobs = append(jobs, j)
			}
			start := time.Now().Add(3 * period).Truncate(period)
			var late tally // ticks a replica skipped with ErrMisfired
			var wg sync.WaitGroup
			for r, j := range jobs {
				offset := time.Duration(r) * skew
				wg.Go(func() {
					schedule(start, period, offset, ticks, func(tick int) {
						at := start.Add(time.Duration(tick)*period + offset) // this replica's tick
						err := j.RunAt(context.Background(), at, func(context.Context, int64) error { c.add(tick); return nil })
						switch {
						case errors.Is(err, job.ErrMisfired):
							late.add(tick)
						case err != nil && !errors.Is(err, job.ErrSkipped):
							t.Errorf("tick %d: %v", tick, err)
						}
					})
				})
			}
			wg.Wait()
			never, once, more := c.count(ticks)
			forfeit := c.forfeited(ticks, &late)
			t.Logf("%d ticks: %d never run (%d forfeited by a late lock), %d once, %d more than once", ticks, never, forfeit, once, more)
			if tc.once {
				// A tick goes unrun only when the replica that took its
				// lock got it past WithMisfire (stalled) and skipped it.
				if more != 0 || never != forfeit {
					t.Fatalf("with WithAtLeast: %d ticks run twice, %d never run (%d forfeited); want every tick once", more, never, forfeit)
				}
			} else if more < ticks/4 {
				// Most ticks run twice; on a loaded machine a run may
				// outlast the skew, and the late tick then finds it held.
				t.Fatalf("control: only %d of %d ticks ran twice without WithAtLeast; the test cannot see the skew", more, ticks)
			}
		})
	}
}

// TestRunAt: RunAt keeps the lock until WithAtLeast after the occurrence's
// time, not after the run began, and skips an occurrence it reached, or
// whose lock it took, later than WithMisfire.
func TestRunAt(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	const atLeast = 400 * time.Millisecond
	a, _ := job.New(replica(t, srv), "job:at", job.WithAtLeast(atLeast), job.WithMisfire(300*time.Millisecond))

	at := time.Now().Add(-150 * time.Millisecond) // the run begins 150ms after its tick
	if err := a.RunAt(ctx, at, func(context.Context, int64) error { return nil }); err != nil {
		t.Fatal(err)
	}
	pttl, err := redis.Int64(srv.Do("PTTL", "locktag:{job:at}"))
	if err != nil {
		t.Fatal(err)
	}
	if limit := atLeast - 150*time.Millisecond; time.Duration(pttl)*time.Millisecond > limit {
		t.Fatalf("kept for %dms after a run 150ms late; want at most %v (until the tick + %v)", pttl, limit, atLeast)
	}
	eventually(t, testwait.Timeout, "the kept lock ends", func() bool {
		n, _ := redis.Int(srv.Do("EXISTS", "locktag:{job:at}"))
		return n == 0
	})

	ran := false
	err = a.RunAt(ctx, time.Now().Add(-time.Second), func(context.Context, int64) error { ran = true; return nil })
	if !errors.Is(err, job.ErrMisfired) || !errors.Is(err, job.ErrSkipped) || ran {
		t.Fatalf("an occurrence a second late: %v, ran %t; want ErrMisfired and ErrSkipped, not run", err, ran)
	}
	t.Log(err)

	// Reached in time, but the lock came late: a waiting run whose wait
	// outlasted WithMisfire.
	waiter, _ := job.New(replica(t, srv), "job:at-wait", job.WithAtLeast(atLeast), job.WithMisfire(100*time.Millisecond), job.WithWait(10*time.Second))
	holder, _ := job.New(replica(t, srv), "job:at-wait")
	_, finish, held := holdRun(t, holder)
	at = time.Now()
	errc := make(chan error, 1)
	go func() {
		errc <- waiter.RunAt(ctx, at, func(context.Context, int64) error { ran = true; return nil })
	}()
	eventually(t, testwait.Timeout, "the waiter queued past its misfire", func() bool {
		return queued(t, srv, "job:at-wait") == 1 && time.Since(at) > 100*time.Millisecond
	})
	finish()
	if err := testwait.Recv(t, held, "the holder's end"); err != nil {
		t.Fatal(err)
	}
	if err := testwait.Recv(t, errc, "the waiter's end"); !errors.Is(err, job.ErrMisfired) || ran {
		t.Fatalf("a lock that came past WithMisfire: %v, ran %t; want ErrMisfired, not run", err, ran)
	}

	plain, _ := job.New(replica(t, srv), "job:at-plain")
	if err := plain.RunAt(ctx, time.Now().Add(-time.Hour), func(context.Context, int64) error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("RunAt without WithAtLeast: %v, ran %t; want Run", err, ran)
	}
}

// TestLockAtLeast: Unlock right after Lock keeps the lock for the rest of
// WithAtLeast, counted from Lock; a run longer than that frees it at once.
func TestLockAtLeast(t *testing.T) {
	srv := redistest.Start(t)
	const atLeast = 400 * time.Millisecond
	ctx := context.Background()
	a, _ := job.New(replica(t, srv), "job:keep", job.WithAtLeast(atLeast))
	b, _ := job.New(replica(t, srv), "job:keep")

	l, err := a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	taken := time.Now()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(ctx); !errors.Is(err, job.ErrSkipped) {
		t.Fatalf("right after a short run's Unlock: %v, want ErrSkipped", err)
	}
	var lb *job.Lock
	eventually(t, testwait.Timeout, "the kept lock ends", func() bool {
		lb, err = b.Lock(ctx)
		return err == nil
	})
	if d := time.Since(taken); d < atLeast {
		t.Fatalf("the lock was free %v after it was taken; WithAtLeast %v", d, atLeast)
	}
	if err := lb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// A run longer than WithAtLeast: freed when it ends.
	short, _ := job.New(replica(t, srv), "job:keep-short", job.WithAtLeast(20*time.Millisecond))
	l, err = short.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(40 * time.Millisecond) // the run outlasts WithAtLeast
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	other, _ := job.New(replica(t, srv), "job:keep-short")
	if err := other.Run(ctx, func(context.Context, int64) error { return nil }); err != nil {
		t.Fatalf("after a run longer than WithAtLeast: %v, want the lock free", err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("second Unlock: %v, want ErrNotHeld", err)
	}
}
