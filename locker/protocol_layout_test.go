package locker_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/protocol"
	"github.com/locktag/locktag/locker/redigo"
)

// callRecorder passes every call on and records, per script, the key and
// argument counts it was called with, and the arguments as text.
type callRecorder struct {
	driver.Driver
	mu    sync.Mutex
	calls map[string][][2]int
	args  map[string][][]string
}

func (d *callRecorder) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	d.mu.Lock()
	name := protocol.NameOf(s)
	d.calls[name] = append(d.calls[name], [2]int{keys.Len(), len(args)})
	text := make([]string, len(args))
	for i, a := range args {
		if b, ok := a.([]byte); ok {
			a = string(b)
		}
		text[i] = fmt.Sprint(a)
	}
	if d.args == nil {
		d.args = map[string][][]string{}
	}
	d.args[name] = append(d.args[name], text)
	d.mu.Unlock()
	return d.Driver.Eval(ctx, s, keys, args...)
}

// argValues are the values each argument may take in
// TestScriptCallsMatchLayouts, by its name in the layout (and the
// script's, where one name means different things): distinct durations,
// so that an argument sent in another's place fails.
func argValue(script, arg, v string, sids map[string]bool) bool {
	token := regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`)
	in := func(vs ...string) bool { return slices.Contains(vs, v) }
	switch {
	case arg == "token":
		return token.MatchString(v)
	case arg == "sid":
		sids[v] = true
		return v != "" && !token.MatchString(v)
	case arg == "ttl_ms" && script == "idem_end":
		return v != "" && !in("1100", "30", "5000", "777", "10")
	case arg == "ttl_ms":
		return in("1100")
	case arg == "wait_ms":
		return in("0", "30", "5000")
	case arg == "window_ms":
		return in("777", "0")
	case arg == "keep_ms":
		return in("10")
	case arg == "mode" && strings.HasSuffix(script, "_acquire"):
		return in("a", "e", "r", "n")
	case arg == "mode" && strings.HasSuffix(script, "_leave"):
		return in("k", "r")
	case arg == "mode":
		return in("c", "a")
	case arg == "handoff":
		return in("g", "n")
	case arg == "label":
		return in("job", "w", "x")
	case arg == "limit":
		return in("2")
	case arg == "kind":
		return in("r", "w")
	case arg == "fingerprint":
		return len(v) == 64
	case arg == "reason":
		return in("test")
	case arg == "channel" && script == "idem_end":
		return strings.HasSuffix(v, ":rc")
	case arg == "outcome":
		return in("done", "")
	}
	return true
}

// TestScriptCallsMatchLayouts: the locker calls each script with as many
// keys and arguments as its layout (docs/protocol.md) says: at least the
// required ones, at most all of them (a multi-key script: whole groups).
func TestScriptCallsMatchLayouts(t *testing.T) {
	srv := redistest.Start(t)
	rec := &callRecorder{Driver: redigo.New(srv.Pool(t)), calls: map[string][][2]int{}}
	lk := newLockerOn(t, rec, locker.WithGrantWindow(777*time.Millisecond))
	ctx := context.Background()
	run := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	for _, p := range []locker.Params{
		{TTL: 1100 * time.Millisecond},
		{TTL: 1100 * time.Millisecond, Label: "job"},
		{TTL: 1100 * time.Millisecond, Limit: 2},
		{TTL: 1100 * time.Millisecond, Mode: locker.Read},
		{TTL: 1100 * time.Millisecond, Mode: locker.Write, Label: "w"},
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
		run("extend", le.Extend(ctx, 1100*time.Millisecond))
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
	many, err := lk.ObtainMany(ctx, []string{"m1", "m2"}, locker.Params{TTL: 1100 * time.Millisecond, Label: "x"})
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
		l, ok := protocol.LayoutOf(name)
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
	// Each argument in its place: the value sent where the layout names
	// it is one that argument takes.
	sids := map[string]bool{}
	for name, calls := range rec.args {
		l, ok := protocol.LayoutOf(name)
		if !ok || l.Repeat {
			continue
		}
		for _, args := range calls {
			for i, v := range args {
				if i < len(l.Args) && !argValue(name, l.Args[i].Name, v, sids) {
					t.Errorf("%s: argument %d (%s) is %q: %v", name, i+1, l.Args[i].Name, v, args)
				}
			}
		}
	}
	if len(sids) != 1 {
		t.Errorf("sid arguments %v: want the Locker's one", sids)
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
func bounds(fs []protocol.Field) [2]int {
	least := len(fs)
	for i, f := range fs {
		if f.Optional {
			least = i
			break
		}
	}
	return [2]int{least, len(fs)}
}
