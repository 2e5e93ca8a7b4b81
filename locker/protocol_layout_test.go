package locker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/scripts"
	"github.com/locktag/locktag/locker/redigo"
)

// callRecorder passes every call on and records, per script, the key and
// argument counts it was called with.
type callRecorder struct {
	driver.Driver
	mu    sync.Mutex
	calls map[string][][2]int
}

func (d *callRecorder) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	d.mu.Lock()
	name := scripts.NameOf(s)
	d.calls[name] = append(d.calls[name], [2]int{keys.Len(), len(args)})
	d.mu.Unlock()
	return d.Driver.Eval(ctx, s, keys, args...)
}

// TestScriptCallsMatchLayouts: the locker calls each script with as many
// keys and arguments as its layout (docs/protocol.md) says: at least the
// required ones, at most all of them (a multi-key script: whole groups).
func TestScriptCallsMatchLayouts(t *testing.T) {
	srv := redistest.Start(t)
	rec := &callRecorder{Driver: redigo.New(srv.Pool(t)), calls: map[string][][2]int{}}
	lk := newLockerOn(t, rec)
	ctx := context.Background()
	run := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	for _, p := range []locker.Params{
		{TTL: time.Second},
		{TTL: time.Second, Label: "job"},
		{TTL: time.Second, Limit: 2},
		{TTL: time.Second, Mode: locker.Read},
		{TTL: time.Second, Mode: locker.Write, Label: "w"},
	} {
		le := mustObtain(t, lk, ctx, "calls", p)
		run("reenter", func() error {
			in, err := lk.Obtain(le.Context(), "calls", p)
			if err == nil {
				err = in.Release(ctx)
			}
			return err
		}())
		_, err := le.TTL(ctx)
		run("ttl", err)
		run("extend", le.Extend(ctx, time.Second))
		// A waiter queues, leaves, and another takes over on release.
		wp := p
		wp.Wait = 30 * time.Millisecond
		if p.Limit > 0 {
			other := mustObtain(t, lk, ctx, "calls", p)
			defer func() { _ = other.Release(ctx) }()
		}
		if p.Mode != locker.Read {
			if _, err := lk.Obtain(ctx, "calls", wp); err == nil {
				t.Fatalf("%+v: a waiter obtained a held lock", p)
			}
		}
		if p.Limit == 0 && p.Mode == locker.Exclusive {
			run("keep", le.ReleaseAfter(ctx, 10*time.Millisecond))
		} else {
			run("release", le.Release(ctx))
		}
		again := p
		again.Wait = 5 * time.Second // past a kept lock's end
		le = mustObtain(t, lk, ctx, "calls", again)
		run("force", lk.ForceRelease(ctx, "calls", "test"))
		_, _ = lk.Inspect(ctx, "calls")
	}
	many, err := lk.ObtainMany(ctx, []string{"m1", "m2"}, locker.Params{TTL: time.Second, Label: "x"})
	run("many", err)
	run("many release", many.Release(ctx))
	c, err := lk.Idempotent(ctx, "idem", "0000000000000000000000000000000000000000000000000000000000000000", locker.IdempotencyParams{})
	run("claim", err)
	run("complete", c.Complete(ctx, []byte("done")))
	_, _, err = lk.InspectIdempotency(ctx, "idem")
	run("inspect idempotency", err)
	_, err = lk.Allow(ctx, "r", locker.RateParams{Limit: 10, Period: time.Second})
	run("allow", err)
	_, _, err = lk.InspectRate(ctx, "r")
	run("inspect rate", err)
	_, _, err = lk.List(ctx, "", "")
	run("list", err)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	for name, calls := range rec.calls {
		l, ok := scripts.LayoutOf(name)
		if !ok {
			continue // the start-up check (check.lua) is not a registered script
		}
		keys, args := bounds(l.Keys), bounds(l.Args)
		for _, c := range calls {
			okKeys := c[0] >= keys[0] && c[0] <= keys[1]
			if l.Repeat {
				okKeys = c[0] > 0 && c[0]%len(l.Keys) == 0
			}
			okArgs := c[1] >= args[0] && c[1] <= args[1]
			if l.Repeat {
				okArgs = c[1] >= 1+c[0]/len(l.Keys) && c[1] <= 2+c[0]/len(l.Keys)
			}
			if !okKeys || !okArgs {
				t.Errorf("%s called with %d keys and %d arguments; its layout takes %v keys and %v arguments", name, c[0], c[1], keys, args)
			}
		}
	}
	for _, want := range []string{"mutex_acquire", "mutex_release", "mutex_leave", "mutex_extend", "mutex_pttl", "mutex_keep", "mutex_force",
		"sem_acquire", "sem_release", "sem_extend", "sem_pttl", "sem_force", "rw_acquire", "rw_release", "rw_force",
		"multi_acquire", "idem_begin", "idem_end", "idem_inspect", "rate", "rate_inspect", "inspect", "list"} {
		if len(rec.calls[want]) == 0 {
			t.Errorf("no call of %s was checked", want)
		}
	}
}

// bounds is the least and the most fields a call passes.
func bounds(fs []scripts.Field) [2]int {
	least := len(fs)
	for i, f := range fs {
		if f.Optional {
			least = i
			break
		}
	}
	return [2]int{least, len(fs)}
}
