package job_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/flaky"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/job"
	"github.com/locktag/locktag/locker/redigo"
)

// TestElectorLossCancelsAtOnce: a leader cut off from Redis loses
// leadership when its lease runs out: its term's context is cancelled with
// ErrLockLost and IsLeader turns false, the waiting candidate leads within
// a lease with a larger token, and the deposed leader's fenced write is
// refused. Once reconnected, the old leader campaigns again.
func TestElectorLossCancelsAtOnce(t *testing.T) {
	srv := redistest.Start(t)
	const name, lease = "leader:lost", 300 * time.Millisecond
	const slack = time.Second // timers on a loaded 2-core machine
	wd := locker.WithWatchdog(lease, lease/3)
	lkA, f := cutOff(t, srv, wd)
	a, _ := job.NewElector(lkA, name, job.WithRetryDelay(20*time.Millisecond))
	b := electors(t, srv, 1, name, wd)[0]
	stock := locker.NewFenced(0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	aTerms, aEnded := make(chan job.Term, 4), make(chan error, 4)
	aDone := make(chan error, 1)
	go func() {
		aDone <- a.Run(ctx, func(lctx context.Context, term job.Term) error {
			aTerms <- term
			<-lctx.Done()
			aEnded <- context.Cause(lctx)
			return lctx.Err()
		})
	}()
	ta := testwait.Recv(t, aTerms, "a leads")
	if _, err := stock.Load(ta.Token()); err != nil {
		t.Fatal(err)
	}
	bTerms := make(chan job.Term, 4)
	bDone := make(chan error, 1)
	go func() {
		bDone <- b.Run(ctx, func(lctx context.Context, term job.Term) error {
			bTerms <- term
			<-lctx.Done()
			return nil
		})
	}()
	eventually(t, testwait.Timeout, "b queued", func() bool { return queued(t, srv, name) == 1 })

	f.Down.Store(true) // a is cut off: its renewals fail
	cut := time.Now()
	cause := testwait.Recv(t, aEnded, "a's term ended")
	lostAfter := time.Since(cut)
	if !errors.Is(cause, locker.ErrLockLost) {
		t.Fatalf("a's term ended with %v, want ErrLockLost", cause)
	}
	if a.IsLeader() {
		t.Fatal("a still says it leads after its term's context ended")
	}
	tb := testwait.Recv(t, bTerms, "b leads")
	replacedAfter := time.Since(cut)
	t.Logf("lease %v: a's context cancelled %v after the cut, b leads %v after it", lease, lostAfter.Round(time.Millisecond), replacedAfter.Round(time.Millisecond))
	if lostAfter > lease+slack || replacedAfter > lease+slack {
		t.Fatalf("a lost after %v, b led after %v; want both within lease %v + %v", lostAfter, replacedAfter, lease, slack)
	}
	if tb.Token() <= ta.Token() {
		t.Fatalf("b's token %d not above a's %d", tb.Token(), ta.Token())
	}
	if _, err := stock.Update(tb.Token(), func(v int) (int, error) { return v + 1, nil }); err != nil {
		t.Fatal(err)
	}
	if err := stock.Store(ta.Token(), 42); !errors.Is(err, locker.ErrStaleToken) {
		t.Fatalf("the deposed leader's write: %v, want ErrStaleToken", err)
	}

	f.Down.Store(false)
	eventually(t, testwait.Timeout, "a campaigns again", func() bool { return queued(t, srv, name) == 1 })
	cancel()
	for _, c := range []chan error{aDone, bDone} {
		if err := testwait.Recv(t, c, "Run's end"); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v, want context.Canceled", err)
		}
	}
}

// TestElectorRedisDown: a candidate that cannot reach Redis keeps
// campaigning, never faster than WithRetryDelay, and leads once Redis
// answers.
func TestElectorRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	f := &countingDriver{Driver: &flaky.Driver{Driver: redigo.New(srv.Pool(t))}}
	lk, err := locker.New(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	const retry = 20 * time.Millisecond
	e, _ := job.NewElector(lk, "leader:down", job.WithRetryDelay(retry))
	f.Down.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	terms := make(chan job.Term, 1)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- e.Run(ctx, func(lctx context.Context, term job.Term) error {
			terms <- term
			<-lctx.Done()
			return nil
		})
	}()
	const tries = 5
	eventually(t, testwait.Timeout, "campaign calls retried", func() bool { return f.failed.Load() >= tries })
	if took := time.Since(start); took < (tries-1)*retry {
		t.Fatalf("%d campaign calls in %v: faster than one per %v", f.failed.Load(), took, retry)
	}
	select {
	case <-terms:
		t.Fatal("led without Redis")
	default:
	}
	f.Down.Store(false)
	if term := testwait.Recv(t, terms, "leads once Redis answers"); term.Token() <= 0 {
		t.Fatalf("token %d", term.Token())
	}
	cancel()
	if err := testwait.Recv(t, done, "Run's end"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
}

// countingDriver counts the failed campaign calls of a flaky driver: the
// calls of the script that failed first (a failed campaign call is followed
// by a clean-up call of another script).
type countingDriver struct {
	*flaky.Driver
	mu     sync.Mutex
	first  string // the first failed call's script
	failed atomic.Int64
}

func (c *countingDriver) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	v, err := c.Driver.Eval(ctx, s, keys, args...)
	if err != nil {
		c.mu.Lock()
		if c.first == "" {
			c.first = s.Hash()
		}
		if c.first == s.Hash() {
			c.failed.Add(1)
		}
		c.mu.Unlock()
	}
	return v, err
}
