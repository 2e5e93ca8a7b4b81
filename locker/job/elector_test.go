package job_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

func TestNewElectorBadOptions(t *testing.T) {
	srv := redistest.Start(t)
	lk := replica(t, srv)
	for _, tc := range []struct {
		name string
		lk   *locker.Locker
		el   string
		opts []job.ElectorOption
		want string
	}{
		{"nil locker", nil, "l", nil, "nil Locker"},
		{"empty name", lk, "", nil, "empty elector name"},
		{"nil option", lk, "l", []job.ElectorOption{nil}, "nil ElectorOption"},
		{"zero retry", lk, "l", []job.ElectorOption{job.WithRetryDelay(0)}, "WithRetryDelay(0s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := job.NewElector(tc.lk, tc.el, tc.opts...)
			if !errors.Is(err, job.ErrBadOption) || e != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewElector: %v, %v; want ErrBadOption saying %q", e, err, tc.want)
			}
		})
	}
	var zero job.Term
	if zero.Token() != 0 || zero.Context() != nil || zero.Resign(context.Background()) != nil || !zero.Since().IsZero() {
		t.Fatal("the zero Term is not an empty term")
	}
}

// electors returns n candidates for name, each on its own replica.
func electors(t *testing.T, srv *redistest.Server, n int, name string, opts ...locker.Option) []*job.Elector {
	t.Helper()
	out := make([]*job.Elector, n)
	for i := range out {
		e, err := job.NewElector(replica(t, srv, opts...), name, job.WithRetryDelay(20*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = e
	}
	return out
}

// leaders lists which of els lead now.
func leaders(els []*job.Elector) []int {
	var out []int
	for i, e := range els {
		if e.IsLeader() {
			out = append(out, i)
		}
	}
	return out
}

// TestElectorFIFOHandover: candidates lead in the order they came; a
// leader that resigns queues again behind the others; each term's token is
// above the last, and exactly one candidate leads at each step.
func TestElectorFIFOHandover(t *testing.T) {
	srv := redistest.Start(t)
	const name = "leader:fifo"
	els := electors(t, srv, 3, name)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var mu sync.Mutex
	var order []int
	var tokens []int64
	done := make(chan error, len(els))
	start := func(i int) {
		go func() {
			done <- els[i].Run(ctx, func(lctx context.Context, term job.Term) error {
				mu.Lock()
				order, tokens = append(order, i), append(tokens, term.Token())
				mu.Unlock()
				<-lctx.Done()
				return nil
			})
		}()
	}
	start(0)
	eventually(t, testwait.Timeout, "the first candidate leads", els[0].IsLeader)
	start(1)
	eventually(t, testwait.Timeout, "the second queued", func() bool { return queued(t, srv, name) == 1 })
	start(2)
	eventually(t, testwait.Timeout, "the third queued", func() bool { return queued(t, srv, name) == 2 })

	for _, step := range []struct{ from, to int }{{0, 1}, {1, 2}, {2, 0}} {
		if err := els[step.from].Resign(ctx); err != nil {
			t.Fatal(err)
		}
		eventually(t, testwait.Timeout, fmt.Sprintf("candidate %d leads after %d resigned", step.to, step.from), els[step.to].IsLeader)
		if l := leaders(els); len(l) != 1 {
			t.Fatalf("leaders %v after %d resigned, want only %d", l, step.from, step.to)
		}
	}
	cancel()
	for range els {
		if err := testwait.Recv(t, done, "Run's end"); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run after ctx ended: %v, want context.Canceled", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(order) != "[0 1 2 0]" {
		t.Fatalf("leaders in order %v, want [0 1 2 0]", order)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("term tokens %v do not increase", tokens)
		}
	}
}

// TestElectorExclusive: candidates whose terms are short (lead returns at
// once, so leadership rotates) never lead at the same time, and all take
// turns (a resigned leader queues again behind the others). The control runs the same lead functions
// without an Elector and shows the detector sees the overlap.
func TestElectorExclusive(t *testing.T) {
	srv := redistest.Start(t)
	const candidates, terms = 3, 30
	for _, elected := range []bool{true, false} {
		t.Run(fmt.Sprintf("elected=%t", elected), func(t *testing.T) {
			var o overlap
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			led := make([]int, candidates)
			total := 0
			lead := func(i int) func(context.Context, job.Term) error {
				return func(context.Context, job.Term) error {
					o.enter()
					defer o.leave()
					time.Sleep(time.Millisecond) // the leader's work: long enough to overlap unelected
					mu.Lock()
					defer mu.Unlock()
					led[i]++
					if total++; total >= terms {
						cancel()
					}
					return nil
				}
			}
			els := electors(t, srv, candidates, "leader:exclusive")
			var wg sync.WaitGroup
			for i, e := range els {
				wg.Go(func() {
					if !elected {
						for ctx.Err() == nil {
							_ = lead(i)(ctx, job.Term{})
						}
						return
					}
					if err := e.Run(ctx, lead(i)); !errors.Is(err, context.Canceled) {
						t.Errorf("Run: %v", err)
					}
				})
			}
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			t.Logf("terms per candidate %v, most leading at once %d", led, o.most.Load())
			if !elected {
				if o.most.Load() < 2 {
					t.Fatalf("control: the detector saw no overlap without an Elector (most %d)", o.most.Load())
				}
				return
			}
			if o.most.Load() != 1 {
				t.Fatalf("%d candidates led at once", o.most.Load())
			}
			for i, n := range led {
				if n < terms/candidates/2 {
					t.Fatalf("candidate %d led %d of %d terms (%v): starved", i, n, total, led)
				}
			}
		})
	}
}

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

// TestElectorCampaign: Campaign returns a term and holds the Elector until
// the term is resigned; a campaign bounded by a context ends with it.
func TestElectorCampaign(t *testing.T) {
	srv := redistest.Start(t)
	els := electors(t, srv, 2, "leader:campaign")
	a, b := els[0], els[1]
	ctx := context.Background()

	ta, err := a.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cur, ok := a.Term(); !ok || cur.Token() != ta.Token() || !a.IsLeader() {
		t.Fatalf("a.Term() = %v, %t after Campaign", cur.Token(), ok)
	}
	if _, err := a.Campaign(ctx); !errors.Is(err, job.ErrCampaigning) {
		t.Fatalf("second Campaign: %v, want ErrCampaigning", err)
	}
	if err := a.Run(ctx, nil); !errors.Is(err, job.ErrCampaigning) {
		t.Fatalf("Run during a term: %v, want ErrCampaigning", err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = b.Campaign(short)
	cancel()
	if !errors.Is(err, locker.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) || b.IsLeader() {
		t.Fatalf("bounded Campaign while a leads: %v, want ErrNotObtained and DeadlineExceeded", err)
	}

	if err := ta.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if a.IsLeader() || !errors.Is(context.Cause(ta.Context()), job.ErrResigned) {
		t.Fatalf("after Resign: leader %t, cause %v", a.IsLeader(), context.Cause(ta.Context()))
	}
	if err := ta.Resign(ctx); err != nil {
		t.Fatalf("second Resign: %v", err)
	}
	tb, err := b.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Token() <= ta.Token() {
		t.Fatalf("b's token %d not above a's %d", tb.Token(), ta.Token())
	}
	short, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = a.Campaign(short) // a may campaign again: its term ended
	cancel()
	if !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("a's new Campaign while b leads: %v, want ErrNotObtained", err)
	}
	if err := b.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if b.IsLeader() || !errors.Is(context.Cause(tb.Context()), job.ErrResigned) {
		t.Fatal("Elector.Resign did not end the Campaign's term")
	}
	if _, err := b.Campaign(ctx); err != nil {
		t.Fatalf("Campaign after Elector.Resign: %v", err)
	}
}

// TestElectorLeadError: lead failing while it leads ends Run with that
// error and hands leadership on at once.
func TestElectorLeadError(t *testing.T) {
	srv := redistest.Start(t)
	els := electors(t, srv, 2, "leader:err")
	boom := errors.New("boom")
	if err := els[0].Run(context.Background(), func(context.Context, job.Term) error { return boom }); err != boom {
		t.Fatalf("Run: %v, want lead's error", err)
	}
	if els[0].IsLeader() {
		t.Fatal("still leading after Run returned")
	}
	short, cancel := context.WithTimeout(context.Background(), testwait.Timeout)
	defer cancel()
	tb, err := els[1].Campaign(short)
	if err != nil {
		t.Fatalf("the next candidate: %v", err)
	}
	_ = tb.Resign(context.Background())
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
