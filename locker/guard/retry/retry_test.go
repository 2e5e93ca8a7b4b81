package retry_test

import (
	"context"
	"errors"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/retry"
)

var errAttempt = errors.New("attempt failed")

func TestRetries(t *testing.T) {
	p := retry.New()
	for c, want := range map[retry.Class]bool{retry.Done: false, retry.NoAnswer: true, retry.InFlight: true,
		retry.Busy: false, retry.Throttled: true, retry.Unavailable: true, retry.KeyReused: false} {
		if p.Retries(c) != want {
			t.Errorf("Retries(%v) = %v", c, !want)
		}
	}
	if !retry.New(retry.WithRetryBusy(true)).Retries(retry.Busy) {
		t.Error("WithRetryBusy(true) does not retry Busy")
	}
}

// The backoff doubles from base, stays within [b/2, b] and is capped; a
// longer server hint wins, up to WithMaxRetryAfter.
func TestDelays(t *testing.T) {
	var got []retry.Event
	p := retry.New(retry.WithBackoff(time.Millisecond, 4*time.Millisecond), retry.WithMaxAttempts(6),
		retry.WithMaxRetryAfter(15*time.Millisecond), retry.WithOnRetry(func(e retry.Event) { got = append(got, e) }))
	a := p.Begin()
	hints := []time.Duration{0, 0, 0, 0, time.Hour}
	for _, h := range hints {
		start := time.Now()
		if err := a.Wait(t.Context(), retry.Unavailable, h, errAttempt); err != nil {
			t.Fatal(err)
		}
		if el, want := time.Since(start), got[len(got)-1].Delay; el < want {
			t.Fatalf("waited %v, announced %v", el, want)
		}
	}
	limits := []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond}
	for i, e := range got[:4] {
		if e.Attempt != i+1 || e.Delay < limits[i]/2 || e.Delay > limits[i] || !errors.Is(e.Err, errAttempt) {
			t.Errorf("retry %d: %+v, want a delay in [%v, %v]", i+1, e, limits[i]/2, limits[i])
		}
	}
	if e := got[4]; e.Delay != 15*time.Millisecond || e.Hint != time.Hour {
		t.Errorf("an hour's hint: %+v, want the 15ms cap", e)
	}
	err := a.Wait(t.Context(), retry.Unavailable, 0, errAttempt)
	if !errors.Is(err, retry.ErrBudgetExhausted) || !errors.Is(err, errAttempt) || a.N() != 6 {
		t.Fatalf("after 6 attempts: %v (attempt %d)", err, a.N())
	}
}

func TestBudgetAndDeadline(t *testing.T) {
	p := retry.New(retry.WithBudget(50*time.Millisecond), retry.WithMaxRetryAfter(time.Second))
	start := time.Now()
	err := p.Begin().Wait(t.Context(), retry.Throttled, 100*time.Millisecond, nil)
	if !errors.Is(err, retry.ErrBudgetExhausted) || time.Since(start) > 40*time.Millisecond {
		t.Fatalf("hint past the budget: %v after %v; want an error at once", err, time.Since(start))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err = retry.New(retry.WithMaxRetryAfter(time.Second)).Begin().Wait(ctx, retry.Throttled, 100*time.Millisecond, errAttempt)
	if !errors.Is(err, retry.ErrBudgetExhausted) || !errors.Is(err, errAttempt) {
		t.Fatalf("hint past the deadline: %v", err)
	}
}

func TestCancelWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	p := retry.New(retry.WithMaxRetryAfter(time.Minute), retry.WithBudget(time.Hour),
		retry.WithOnRetry(func(retry.Event) { cancel() }))
	start := time.Now()
	err := p.Begin().Wait(ctx, retry.InFlight, time.Minute, errAttempt)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errAttempt) || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled: %v after %v", err, time.Since(start))
	}
}

// Keys are unique and FormatKey's form is what the server reads back.
func TestKeys(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		k := retry.NewKey()
		if seen[k] {
			t.Fatalf("duplicate key %q", k)
		}
		seen[k] = true
		if got, err := guard.ParseIdempotencyKey(retry.FormatKey(k), 0); err != nil || got != k {
			t.Fatalf("%q: parsed %q, %v", k, got, err)
		}
	}
	for _, k := range []string{`a"b`, `a\b`, `with space`, `~!`} {
		if got, err := guard.ParseIdempotencyKey(retry.FormatKey(k), 0); err != nil || got != k {
			t.Errorf("%q: formatted %s, parsed %q, %v", k, retry.FormatKey(k), got, err)
		}
	}
	if k := retry.New(retry.WithNewKey(func() string { return "fixed" })).NewKey(); k != "fixed" {
		t.Errorf("WithNewKey: %q", k)
	}
}

// The zero Policy and a nil one behave as New().
func TestZeroPolicy(t *testing.T) {
	for _, p := range []*retry.Policy{nil, {}} {
		if !p.Retries(retry.Unavailable) || p.Retries(retry.Busy) || len(p.NewKey()) != 26 {
			t.Fatalf("%v: not the defaults", p)
		}
		if err := p.Begin().Wait(t.Context(), retry.Unavailable, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// The package imports the standard library only: every transport's
// client, and the core module, can use it for free.
func TestStdlibOnly(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			path := strings.Trim(im.Path.Value, `"`)
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %s: only the standard library is allowed", f, path)
			}
		}
	}
}
