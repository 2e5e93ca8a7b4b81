package job_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

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
			if !errors.Is(err, locker.ErrBadOption) || j != nil {
				t.Fatalf("New: %v, %v; want locker.ErrBadOption", j, err)
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
	if err := job.Run(context.Background(), nil, "job:err", nil); !errors.Is(err, locker.ErrBadOption) {
		t.Fatalf("Run with a nil Locker: %v, want locker.ErrBadOption", err)
	}
}
