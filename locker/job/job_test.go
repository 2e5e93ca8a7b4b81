package job_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/job"
)

func TestNewBadOptions(t *testing.T) {
	srv := redistest.Start(t)
	lk := replica(t, srv)
	for _, tc := range []struct {
		name string
		lk   *locker.Locker
		job  string
		opts []job.Option
		want string // in the message
	}{
		{"nil locker", nil, "j", nil, "nil Locker"},
		{"empty name", lk, "", nil, "empty job name"},
		{"nil option", lk, "j", []job.Option{nil}, "nil Option"},
		{"negative wait", lk, "j", []job.Option{job.WithWait(-time.Second)}, "WithWait(-1s)"},
		{"zero at-most", lk, "j", []job.Option{job.WithAtMost(0)}, "WithAtMost(0s)"},
		{"negative at-least", lk, "j", []job.Option{job.WithAtLeast(-time.Second)}, "WithAtLeast(-1s)"},
		{"at-least above at-most", lk, "j", []job.Option{job.WithAtMost(time.Second), job.WithAtLeast(2 * time.Second)}, "must not exceed WithAtMost(1s)"},
		{"negative misfire", lk, "j", []job.Option{job.WithAtLeast(time.Second), job.WithMisfire(-time.Second)}, "WithMisfire(-1s): must not be negative"},
		{"misfire without at-least", lk, "j", []job.Option{job.WithMisfire(time.Second)}, "WithMisfire(1s): needs WithAtLeast"},
		{"misfire not below at-least", lk, "j", []job.Option{job.WithAtLeast(time.Second), job.WithMisfire(time.Second)}, "must be below WithAtLeast(1s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := job.New(tc.lk, tc.job, tc.opts...)
			if !errors.Is(err, job.ErrBadOption) || j != nil {
				t.Fatalf("New: %v, %v; want ErrBadOption", j, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
		})
	}
	if _, err := job.New(lk, "j", job.WithWait(0), job.WithAtMost(time.Second), job.WithAtLeast(time.Second)); err != nil {
		t.Fatalf("valid options refused: %v", err)
	}
}

// holdRun starts a run of j that holds the lock until the returned finish
// is called; it returns the run's token once it runs, and the run's error
// channel.
func holdRun(t *testing.T, j *job.Job) (token int64, finish func(), done <-chan error) {
	t.Helper()
	started := make(chan int64, 1)
	release := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- j.Run(context.Background(), func(ctx context.Context, token int64) error {
			started <- token
			<-release
			return nil
		})
	}()
	return testwait.Recv(t, started, "the holding run started"), sync.OnceFunc(func() { close(release) }), errc
}

// TestRunSkipsWhenHeld: a run on another replica while the job runs is
// skipped at once (fn not called) with ErrSkipped; after the first run
// ends, a run goes ahead with a larger fencing token.
func TestRunSkipsWhenHeld(t *testing.T) {
	srv := redistest.Start(t)
	a, _ := job.New(replica(t, srv), "job:report")
	b, _ := job.New(replica(t, srv), "job:report")

	tokA, finish, done := holdRun(t, a)
	ran := false
	start := time.Now()
	err := b.Run(context.Background(), func(context.Context, int64) error { ran = true; return nil })
	if !errors.Is(err, job.ErrSkipped) || !errors.Is(err, locker.ErrNotObtained) || ran {
		t.Fatalf("run while held: err %v, ran %t; want ErrSkipped and ErrNotObtained, not run", err, ran)
	}
	t.Logf("skipped after %v: %v", time.Since(start).Round(time.Millisecond), err)
	finish()
	if err := testwait.Recv(t, done, "the holding run's end"); err != nil {
		t.Fatal(err)
	}
	var tokB int64
	if err := b.Run(context.Background(), func(_ context.Context, tok int64) error { tokB = tok; return nil }); err != nil {
		t.Fatal(err)
	}
	if tokB <= tokA {
		t.Fatalf("second run's token %d not above the first's %d", tokB, tokA)
	}
}

// TestRunWaits: with WithWait a run on another replica queues behind the
// running one and runs when it ends, instead of being skipped.
func TestRunWaits(t *testing.T) {
	srv := redistest.Start(t)
	a, _ := job.New(replica(t, srv), "job:queue")
	b, _ := job.New(replica(t, srv), "job:queue", job.WithWait(10*time.Second))

	tokA, finish, done := holdRun(t, a)
	got := make(chan int64, 1)
	errB := make(chan error, 1)
	go func() {
		errB <- b.Run(context.Background(), func(_ context.Context, tok int64) error { got <- tok; return nil })
	}()
	eventually(t, testwait.Timeout, "the waiting run queued", func() bool { return queued(t, srv, "job:queue") == 1 })
	select {
	case <-got:
		t.Fatal("the waiting run ran while the first held the job")
	default:
	}
	finish()
	if err := testwait.Recv(t, done, "the first run's end"); err != nil {
		t.Fatal(err)
	}
	if tok := testwait.Recv(t, got, "the waiting run ran"); tok <= tokA {
		t.Fatalf("waiting run's token %d not above %d", tok, tokA)
	}
	if err := testwait.Recv(t, errB, "the waiting run's end"); err != nil {
		t.Fatal(err)
	}
}

// TestRunExclusive: replicas running the same job as fast as they can
// (queueing with WithWait) never run it twice at once. The control runs
// the same workload without the job's lock and shows the detector sees
// the overlap.
func TestRunExclusive(t *testing.T) {
	srv := redistest.Start(t)
	const replicas, workers, runs = 3, 2, 15
	for _, guarded := range []bool{true, false} {
		t.Run(fmt.Sprintf("guarded=%t", guarded), func(t *testing.T) {
			var o overlap
			var total sync.WaitGroup
			var count, skipped, failed countingInt
			fn := func(context.Context, int64) error {
				o.enter()
				defer o.leave()
				time.Sleep(time.Millisecond) // the work: long enough to overlap unguarded
				count.add()
				return nil
			}
			for range replicas {
				j, err := job.New(replica(t, srv), "job:exclusive", job.WithWait(30*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				for range workers {
					total.Go(func() {
						for range runs {
							if !guarded {
								_ = fn(context.Background(), 0)
								continue
							}
							switch err := j.Run(context.Background(), fn); {
							case errors.Is(err, job.ErrSkipped):
								skipped.add()
							case err != nil:
								failed.add()
								t.Error(err)
							}
						}
					})
				}
			}
			total.Wait()
			t.Logf("runs %d, skipped %d, failed %d, most at once %d", count.get(), skipped.get(), failed.get(), o.most.Load())
			if guarded {
				if o.most.Load() != 1 || count.get() != replicas*workers*runs {
					t.Fatalf("guarded: most at once %d, runs %d; want 1, %d", o.most.Load(), count.get(), replicas*workers*runs)
				}
			} else if o.most.Load() < 2 {
				t.Fatalf("control: the detector saw no overlap without the lock (most %d)", o.most.Load())
			}
		})
	}
}

type countingInt struct {
	mu sync.Mutex
	n  int
}

func (c *countingInt) add() { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *countingInt) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

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
			var late tally // ticks a replica skipped with ErrLate
			var wg sync.WaitGroup
			for r, j := range jobs {
				offset := time.Duration(r) * skew
				wg.Go(func() {
					schedule(start, period, offset, ticks, func(tick int) {
						at := start.Add(time.Duration(tick)*period + offset) // this replica's tick
						err := j.RunAt(context.Background(), at, func(context.Context, int64) error { c.add(tick); return nil })
						switch {
						case errors.Is(err, job.ErrLate):
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
// time, not after the run began, and skips an occurrence whose lock it
// took later than WithMisfire.
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
	if !errors.Is(err, job.ErrLate) || !errors.Is(err, job.ErrSkipped) || ran {
		t.Fatalf("an occurrence a second late: %v, ran %t; want ErrLate and ErrSkipped, not run", err, ran)
	}
	t.Log(err)

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

// TestAtMost: a run that outlasts WithAtMost has its context cancelled
// with ErrLockLost when the cap passes; Run reports the loss, and the job
// is free for another replica.
func TestAtMost(t *testing.T) {
	srv := redistest.Start(t)
	const atMost = 200 * time.Millisecond
	a, _ := job.New(replica(t, srv), "job:capped", job.WithAtMost(atMost))
	b, _ := job.New(replica(t, srv), "job:capped")
	start := time.Now()
	var cause error
	err := a.Run(context.Background(), func(ctx context.Context, _ int64) error {
		<-ctx.Done() // a run that would go on forever
		cause = context.Cause(ctx)
		return ctx.Err()
	})
	took := time.Since(start)
	if !errors.Is(cause, locker.ErrLockLost) || !errors.Is(err, locker.ErrLockLost) || !errors.Is(err, context.Canceled) {
		t.Fatalf("run past WithAtMost: cause %v, Run %v; want ErrLockLost for both", cause, err)
	}
	if took < atMost {
		t.Fatalf("cancelled after %v, before the cap %v", took, atMost)
	}
	if err := b.Run(context.Background(), func(context.Context, int64) error { return nil }); err != nil {
		t.Fatalf("after the cap: %v", err)
	}
}

// TestRunReportsLoss: a replica cut off from Redis while it runs loses the
// watchdog lock; the run's context is cancelled with ErrLockLost, Run
// reports the loss even though fn returned nil, another replica runs the
// job with a larger token, and the cut-off run's fenced write is refused.
func TestRunReportsLoss(t *testing.T) {
	srv := redistest.Start(t)
	lk, f := cutOff(t, srv, locker.WithWatchdog(300*time.Millisecond, 100*time.Millisecond))
	a, _ := job.New(lk, "job:lost")
	b, _ := job.New(replica(t, srv), "job:lost", job.WithWait(10*time.Second))
	stock := locker.NewFenced(10)

	var stale error
	err := a.Run(context.Background(), func(ctx context.Context, token int64) error {
		if _, err := stock.Load(token); err != nil {
			return err
		}
		f.Down.Store(true) // cut off: renewals fail
		<-ctx.Done()
		if c := context.Cause(ctx); !errors.Is(c, locker.ErrLockLost) {
			t.Errorf("cause %v, want ErrLockLost", c)
		}
		// Another replica runs the job meanwhile and writes.
		if err := b.Run(context.Background(), func(_ context.Context, tok int64) error {
			if tok <= token {
				t.Errorf("next run's token %d not above %d", tok, token)
			}
			_, err := stock.Update(tok, func(v int) (int, error) { return v - 3, nil })
			return err
		}); err != nil {
			t.Error(err)
		}
		stale = stock.Store(token, 9) // the careless write of the lost run
		f.Down.Store(false)
		return nil
	})
	if !errors.Is(err, locker.ErrLockLost) {
		t.Fatalf("Run after a loss: %v, want ErrLockLost", err)
	}
	if !errors.Is(stale, locker.ErrStaleToken) {
		t.Fatalf("the lost run's write: %v, want ErrStaleToken", stale)
	}
	if v, _ := stock.Load(1 << 62); v != 7 {
		t.Fatalf("stock %d, want 7 (the next run's three sales, not the lost run's write)", v)
	}
}

// TestRunPanicReleases: a run that panics releases the job's lock before
// the panic goes on.
func TestRunPanicReleases(t *testing.T) {
	srv := redistest.Start(t)
	a, _ := job.New(replica(t, srv), "job:panic")
	b, _ := job.New(replica(t, srv), "job:panic")
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the run's panic", r)
			}
		}()
		_ = a.Run(context.Background(), func(context.Context, int64) error { panic("boom") })
	}()
	if err := b.Run(context.Background(), func(context.Context, int64) error { return nil }); err != nil {
		t.Fatalf("after a panicking run: %v, want the lock free", err)
	}
}

// TestRunErrors: fn's error comes back as it is; a cancelled context
// skips the run.
func TestRunErrors(t *testing.T) {
	srv := redistest.Start(t)
	lk := replica(t, srv)
	boom := errors.New("boom")
	if err := job.Run(context.Background(), lk, "job:err", func(context.Context, int64) error { return boom }); err != boom {
		t.Fatalf("Run: %v, want fn's error as it is", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := job.Run(ctx, lk, "job:err", func(context.Context, int64) error { return nil })
	if !errors.Is(err, job.ErrSkipped) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Run with a cancelled context: %v, want ErrSkipped and context.Canceled", err)
	}
	if err := job.Run(context.Background(), nil, "job:err", nil); !errors.Is(err, job.ErrBadOption) {
		t.Fatalf("Run with a nil Locker: %v, want ErrBadOption", err)
	}
}
