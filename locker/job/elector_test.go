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
			if !errors.Is(err, locker.ErrBadOption) || e != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewElector: %v, %v; want locker.ErrBadOption saying %q", e, err, tc.want)
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
