package locker_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/obstest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// Redlock's waiters of one key in one process take turns: only the first
// tries on the masters, the next one when it obtained the lock or gave up.

// startWaiters starts one Obtain of key on lk per name, in order, each
// counted as waiting (rec) before the next starts; each sends its result
// on the returned channel, releasing at once unless keep says otherwise.
type lineResult struct {
	name string
	le   *locker.Lease
	err  error
	at   time.Time
}

func startWaiter(t *testing.T, lk *locker.Locker, rec *obstest.Recorder, ctx context.Context, key, name string, p locker.Params, out chan<- lineResult) {
	t.Helper()
	p.Name = name
	go func() {
		le, err := lk.Obtain(ctx, key, p)
		out <- lineResult{name: name, le: le, err: err, at: time.Now()}
	}()
	eventually(t, 5*time.Second, name+" waiting", func() bool {
		return slices.Contains(rec.Events(), "wait.start "+name)
	})
}

// TestRedlockLineTurns: of three waiters in one process, the first gives
// up; the other two obtain in their order when the holder in another
// process releases, each woken at once rather than at the 30s lease's end.
func TestRedlockLineTurns(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	rec := new(obstest.Recorder)
	holder, waiters := newRedlock(t, srvs), newRedlock(t, srvs, locker.WithObserver(rec))
	ctx := context.Background()
	le := mustObtain(t, holder, ctx, "turns", locker.Params{TTL: 30 * time.Second})
	out := make(chan lineResult, 3)
	gaveUp, cancel := context.WithCancel(ctx)
	defer cancel()
	p := locker.Params{TTL: 30 * time.Second, Wait: 20 * time.Second}
	startWaiter(t, waiters, rec, gaveUp, "turns", "w1", p, out)
	startWaiter(t, waiters, rec, ctx, "turns", "w2", p, out)
	startWaiter(t, waiters, rec, ctx, "turns", "w3", p, out)
	cancel()
	if r := <-out; r.name != "w1" || !errors.Is(r.err, locker.ErrNotObtained) {
		t.Fatalf("the cancelled waiter: %s %v", r.name, r.err)
	}
	released := time.Now()
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"w2", "w3"} {
		r := <-out
		if r.err != nil || r.name != want {
			t.Fatalf("got %s (%v), want %s next", r.name, r.err, want)
		}
		if d := r.at.Sub(released); d > 5*time.Second {
			t.Fatalf("%s took %v after the release", r.name, d)
		}
		if err := r.le.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if v := rec.Violations(); len(v) > 0 {
		t.Fatalf("observer: %v", v)
	}
}

// TestRedlockLineLeaseEnds: the waiter after one that obtained the lock
// and never released it (or kept it with ReleaseAfter) obtains it when that
// lease ends, not at its own deadline.
func TestRedlockLineLeaseEnds(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	for _, tc := range []struct {
		name string
		end  func(le *locker.Lease) error
	}{
		{"kept until it lapses", func(*locker.Lease) error { return nil }},
		{"released after a while", func(le *locker.Lease) error {
			return le.ReleaseAfter(context.Background(), 300*time.Millisecond)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := new(obstest.Recorder)
			holder, waiters := newRedlock(t, srvs), newRedlock(t, srvs, locker.WithObserver(rec))
			ctx := context.Background()
			key := "lapse:" + tc.name
			le := mustObtain(t, holder, ctx, key, locker.Params{TTL: 30 * time.Second})
			out := make(chan lineResult, 2)
			startWaiter(t, waiters, rec, ctx, key, "w1", locker.Params{TTL: 500 * time.Millisecond, Wait: 20 * time.Second}, out)
			startWaiter(t, waiters, rec, ctx, key, "w2", locker.Params{TTL: 30 * time.Second, Wait: 20 * time.Second}, out)
			if err := le.Release(ctx); err != nil {
				t.Fatal(err)
			}
			first := <-out
			if first.err != nil || first.name != "w1" {
				t.Fatalf("got %s (%v), want w1 first", first.name, first.err)
			}
			if err := tc.end(first.le); err != nil {
				t.Fatal(err)
			}
			second := <-out
			if second.err != nil {
				t.Fatalf("w2: %v", second.err)
			}
			if d := second.at.Sub(first.at); d > 5*time.Second {
				t.Fatalf("w2 took %v after w1 obtained a 500ms lease", d)
			}
			_ = second.le.Release(ctx)
		})
	}
}

// TestRedlockLineDeadline: a waiter behind another gives up at its own
// deadline.
func TestRedlockLineDeadline(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	rec := new(obstest.Recorder)
	holder, waiters := newRedlock(t, srvs), newRedlock(t, srvs, locker.WithObserver(rec))
	ctx := context.Background()
	le := mustObtain(t, holder, ctx, "deadline", locker.Params{TTL: 30 * time.Second})
	defer func() { _ = le.Release(ctx) }()
	out := make(chan lineResult, 2)
	startWaiter(t, waiters, rec, ctx, "deadline", "w1", locker.Params{TTL: time.Second, Wait: 20 * time.Second}, out)
	start := time.Now()
	startWaiter(t, waiters, rec, ctx, "deadline", "w2", locker.Params{TTL: time.Second, Wait: 200 * time.Millisecond}, out)
	r := <-out
	if r.name != "w2" || !errors.Is(r.err, locker.ErrNotObtained) {
		t.Fatalf("got %s (%v), want w2 not obtained", r.name, r.err)
	}
	if d := r.at.Sub(start); d > 5*time.Second {
		t.Fatalf("w2 gave up after %v, wait 200ms", d)
	}
}

// TestRedlockLineHeldHere: a call that waits for a lock a call of the same
// Locker obtained waits for its release here, sending no script to any
// master until then, and obtains it right after.
func TestRedlockLineHeldHere(t *testing.T) {
	srvs := redistest.StartN(t, 5)
	rec := new(obstest.Recorder)
	lk := newRedlock(t, srvs, locker.WithObserver(rec))
	ctx := context.Background()
	p := locker.Params{TTL: 30 * time.Second, Wait: 20 * time.Second}
	le := mustObtain(t, lk, ctx, "here", p)
	evals := func() (n int) {
		for _, s := range srvs {
			info, err := redis.String(s.Do("INFO", "commandstats"))
			if err != nil {
				t.Fatal(err)
			}
			n += commandCalls(info, "evalsha") + commandCalls(info, "eval")
		}
		return n
	}
	before := evals()
	out := make(chan lineResult, 1)
	startWaiter(t, lk, rec, ctx, "here", "w2", p, out)
	if n := evals() - before; n != 0 {
		t.Fatalf("the waiter sent %d scripts while the lock was held here", n)
	}
	released := time.Now()
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-out
	if r.err != nil {
		t.Fatal(r.err)
	}
	if d := r.at.Sub(released); d > 5*time.Second {
		t.Fatalf("the waiter took %v after the release", d)
	}
	_ = r.le.Release(ctx)
}
