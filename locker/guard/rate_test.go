package guard

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

// A rate tag's guard runs the call while the key is within its rate, with
// the quota in the call's context and the Outcome, and refuses the rest
// with RateLimited, the exact time to the next slot and the quota; it
// takes no lock, and keys are apart.
func TestRateGuard(t *testing.T) {
	lk := newLocker(t)
	g, err := CompileLock(lk, `key:"api:{v.user}" rate:"2/1h" name:"api"`, sources)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for i, rem := range []int{1, 0} {
		var in *Quota
		o := g.Run(ctx, req{"user": "u1"}, "GET /x", func(ctx context.Context) error {
			in = QuotaFromContext(ctx)
			// No lock is held: another request takes the key's lock at once.
			le, err := lk.Obtain(ctx, "api:u1", locker.Params{})
			if err != nil {
				return err
			}
			return le.Release(ctx)
		})
		if o.Kind != OK || o.Err != nil || o.Name != "api" || o.Quota == nil || in != o.Quota {
			t.Fatalf("request %d: %+v, quota in the call %v", i, o, in)
		}
		if q := *o.Quota; q.Policy != "api" || q.Limit != 2 || q.Period != time.Hour || q.Burst != 2 || q.Remaining != rem || q.Reset <= 0 {
			t.Fatalf("request %d: quota %+v", i, q)
		}
	}
	ran := false
	o := g.Run(ctx, req{"user": "u1"}, "GET /x", func(context.Context) error { ran = true; return nil })
	if o.Kind != RateLimited || ran || !errors.Is(o.Err, locker.ErrRateLimited) || o.Quota == nil || o.Quota.Remaining != 0 {
		t.Fatalf("third: %+v, ran %v", o, ran)
	}
	if o.RetryAfter > 30*time.Minute || o.RetryAfter < 29*time.Minute || o.Retry() != o.RetryAfter {
		t.Fatalf("retry after %v, want the next slot, 30m away", o.RetryAfter)
	}
	if o := g.Run(ctx, req{"user": "u2"}, "GET /x", func(context.Context) error { return nil }); o.Kind != OK {
		t.Fatalf("another key: %v", o.Kind)
	}
	// Without a name the policy is "default" and the outcome's name the
	// adapter's.
	d, err := CompileLock(lk, `key:"d:{v.user}" rate:"1/1h"`, sources)
	if err != nil {
		t.Fatal(err)
	}
	if o := d.Run(ctx, req{"user": "u1"}, "GET /d", func(context.Context) error { return nil }); o.Name != "GET /d" || o.Quota.Policy != DefaultPolicy {
		t.Fatalf("unnamed: %+v %+v", o, o.Quota)
	}
	if QuotaFromContext(ctx) != nil {
		t.Fatal("a quota outside any call")
	}
}

// With the tag's wait a request waits for its slot; a missing key value
// is refused before Redis is touched.
func TestRateGuardWaitAndBadKey(t *testing.T) {
	srv := redistest.Start(t)
	lk := lockerOn(t, srv.Pool(t))
	g, err := CompileLock(lk, `key:"w:{v.id}" rate:"1/100ms" burst:"1" wait:"1s"`, sources)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if o := g.Run(t.Context(), req{"id": "1"}, "", func(context.Context) error { return nil }); o.Kind != OK {
			t.Fatalf("request %d: %+v", i, o)
		}
	}
	srv.Stop()
	if o := g.Run(t.Context(), req{}, "", func(context.Context) error { return nil }); o.Kind != BadKey {
		t.Fatalf("missing value: %v", o.Kind)
	}
}

// Redis down: Unavailable, or with WithFailOpen the call runs.
func TestRateGuardFailOpen(t *testing.T) {
	srv := redistest.Start(t)
	lk := lockerOn(t, srv.Pool(t), locker.WithCallTimeout(300*time.Millisecond))
	srv.Stop()
	closed, err := CompileLock(lk, `key:"f:{v.id}" rate:"1/s"`, sources)
	if err != nil {
		t.Fatal(err)
	}
	if o := closed.Run(t.Context(), req{"id": "1"}, "", nil); o.Kind != Unavailable || o.Retry() != time.Second || o.Quota != nil {
		t.Fatalf("fail-closed: %+v", o)
	}
	open, _ := CompileLock(lk, `key:"f:{v.id}" rate:"1/s"`, sources, WithFailOpen())
	var cause error
	if o := open.Run(t.Context(), req{"id": "1"}, "", func(ctx context.Context) error { cause = FailOpenCause(ctx); return nil }); o.Kind != FailedOpen || cause == nil {
		t.Fatalf("fail-open: %+v", o)
	}
}

// A rate tag on a Redlock Locker fails when the guard is built, quoting
// the tag.
func TestRateRedlockRefused(t *testing.T) {
	var ds []driver.Driver
	for _, srv := range redistest.StartN(t, 3) {
		ds = append(ds, redigo.New(srv.Pool(t)))
	}
	lk, err := locker.NewRedlock(ds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	_, err = CompileLock(lk, `key:"t:{v.id}" rate:"5/s"`, sources)
	if !errors.Is(err, locker.ErrKindUnsupported) || !strings.Contains(err.Error(), `rate:"5/s"`) || !strings.Contains(err.Error(), "Redlock") {
		t.Fatalf("error %v, want locker.ErrKindUnsupported quoting the tag", err)
	}
}

// Rate first, lock second: a refused request never reaches the lock, so
// it never queues for it. The other way round (the control) it queues
// behind the holder before the rate refuses it — and the rate guard says
// so in the log, once.
func TestRateBeforeLock(t *testing.T) {
	srv := redistest.Start(t)
	var logs bytes.Buffer
	lk := lockerOn(t, srv.Pool(t))
	log := WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	rate, err := CompileLock(lk, `key:"o:{v.id}" rate:"1/1h"`, sources, log)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := CompileLock(lk, `key:"o:{v.id}" wait:"150ms"`, sources, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	r := req{"id": "1"}
	handler := func(context.Context) error { return nil }
	chain := func(ctx context.Context) Outcome {
		var inner Outcome
		o := rate.Run(ctx, r, "", func(ctx context.Context) error { inner = lock.Run(ctx, r, "", handler); return nil })
		if o.Kind != OK {
			return o
		}
		return inner
	}
	if o := chain(ctx); o.Kind != OK {
		t.Fatalf("first: %v", o.Kind)
	}
	held, err := lk.Obtain(ctx, "o:1", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	if o := chain(ctx); o.Kind != RateLimited {
		t.Fatalf("rate first, lock held: %v; want rate limited before the lock is tried", o.Kind)
	}
	if st, err := lk.Inspect(ctx, "o:1"); err != nil || st.Queued != 0 {
		t.Fatalf("queue after a refusal: %+v %v", st, err)
	}
	if logs.Len() != 0 {
		t.Fatalf("logged %q", logs.String())
	}

	// Control: the lock first. The refused request waits for the lock
	// (Busy after its wait) and never even gets to the rate.
	reversed := func(ctx context.Context) Outcome {
		var inner Outcome
		o := lock.Run(ctx, r, "", func(ctx context.Context) error { inner = rate.Run(ctx, r, "", handler); return nil })
		if o.Kind != OK {
			return o
		}
		return inner
	}
	if o := reversed(ctx); o.Kind != Busy {
		t.Fatalf("control, lock first: %v; want busy: the request queued for the lock", o.Kind)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if o := reversed(ctx); o.Kind != RateLimited {
			t.Fatalf("control, lock free: %v", o.Kind)
		}
	}
	if n := strings.Count(logs.String(), "runs inside a held lock"); n != 1 {
		t.Fatalf("warnings %d, want 1: %q", n, logs.String())
	}
}
