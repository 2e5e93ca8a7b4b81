package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
)

// The lock kinds: limits, read/write, keep-after.

// fill is a handler for a `limit` tag: it counts itself as a holder and
// stays until want holders were in at once (or window passed), so a working limit
// of want is reached and a broken one is exceeded.
func (o *overlap) fill(want int64, window time.Duration) Handler {
	return func(ctx context.Context) (int64, error) {
		n := o.holders.Add(1)
		defer o.holders.Add(-1)
		o.ran.Add(1)
		for m := o.max.Load(); n > m && !o.max.CompareAndSwap(m, n); m = o.max.Load() {
		}
		for end := time.Now().Add(window); time.Now().Before(end) && o.max.Load() < want; {
			time.Sleep(200 * time.Microsecond) // polling the detector, not waiting for an event
		}
		return n, nil
	}
}

const limitTag = `key:"conf:lim:%s" limit:"3" wait:"10s"`

// limit: a `limit:"3"` tag lets 3 requests in at once, never 4.
func limit(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	var o overlap
	c := tr.Lock(t, newLocker(t, srv), limitTag, o.fill(3, 300*time.Millisecond))
	for i, r := range burst(t, []Client{c}, 9, "one") {
		expect(t, fmt.Sprint("request ", i), r, OK)
	}
	if m := o.max.Load(); m != 3 || o.ran.Load() != 9 {
		t.Fatalf("max holders %d (want the limit, 3), ran %d (want 9)", m, o.ran.Load())
	}
}

// limitControl breaks the limit — every request through a Locker with a
// key prefix of its own — and asserts that the detector sees more than 3.
func limitControl(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	var o overlap
	h := o.fill(4, testwait.Timeout/2)
	clients := make([]Client, 4)
	for i := range clients {
		clients[i] = tr.Lock(t, newLocker(t, srv, locker.WithKeyPrefix(fmt.Sprintf("broken%d:", i))), limitTag, h)
	}
	burst(t, clients, len(clients), "one")
	if m := o.max.Load(); m <= 3 {
		t.Fatalf("control: the detector saw max %d holders under a broken limit of 3", m)
	}
}

// limitFull: every permit taken is the limit-full status with a retry
// hint after the wait; a freed permit lets the next request in.
func limitFull(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	var ran atomic.Int64
	c := tr.Lock(t, lk, `key:"conf:full:%s" limit:"2" wait:"50ms"`, func(context.Context) (int64, error) { ran.Add(1); return 1, nil })
	var held []*locker.Lease
	for range 2 {
		le, err := lk.Obtain(t.Context(), "conf:full:x", locker.Params{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, le)
	}
	r := c(t.Context(), Request{Key: "x"})
	expect(t, "while full", r, LimitFull)
	if !r.Retry || ran.Load() != 0 {
		t.Fatalf("retry hint %v (want true), handler ran %d times (want 0)", r.Retry, ran.Load())
	}
	if err := held[0].Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	expect(t, "after a release", c(t.Context(), Request{Key: "x"}), OK)
	_ = held[1].Release(t.Context())
}

// readWrite: two `mode:"read"` requests on one key run at once (each
// handler waits for the other to be inside); a `mode:"write"` request on
// the key meanwhile is busy, and runs once the readers are done.
func readWrite(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	var in sync.WaitGroup
	in.Add(2)
	both := make(chan struct{})
	go func() { in.Wait(); close(both) }()
	writeNow := make(chan struct{})
	var wrote atomic.Int64
	write := tr.Lock(t, lk, `key:"conf:rw:%s" mode:"write"`, func(context.Context) (int64, error) { wrote.Add(1); return 1, nil })
	read := tr.Lock(t, lk, `key:"conf:rw:%s" mode:"read" wait:"5s"`, func(ctx context.Context) (int64, error) {
		in.Done()
		select {
		case <-both:
		case <-time.After(testwait.Timeout / 2):
			return 0, errors.New("the other reader never ran meanwhile")
		}
		<-writeNow // hold until the write was tried
		return 1, nil
	})
	var wg sync.WaitGroup
	res := make([]Result, 2)
	for i := range res {
		wg.Go(func() { res[i] = read(t.Context(), Request{Key: "x"}) })
	}
	testwait.Recv(t, both, "both readers inside")
	expect(t, "write while read", write(t.Context(), Request{Key: "x"}), Busy)
	close(writeNow)
	wg.Wait()
	expect(t, "reader 1", res[0], OK)
	expect(t, "reader 2", res[1], OK)
	expect(t, "write after the readers", write(t.Context(), Request{Key: "x"}), OK)
	if wrote.Load() != 1 {
		t.Fatalf("the writer ran %d times, want 1", wrote.Load())
	}
}

// keep: a `keep` tag keeps the lock after a successful handler, so a
// resubmit inside the window is busy and one after it succeeds; the same
// resubmit without `keep` (the control) succeeds at once.
func keep(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	var ran atomic.Int64
	h := func(context.Context) (int64, error) { ran.Add(1); return 1, nil }
	const window = 300 * time.Millisecond
	c := tr.Lock(t, lk, `key:"conf:keep:%s" keep:"300ms"`, h)
	start := time.Now()
	expect(t, "first", c(t.Context(), Request{Key: "x"}), OK)
	r := c(t.Context(), Request{Key: "x"})
	expect(t, "resubmit inside the window", r, Busy)
	if !r.Retry || ran.Load() != 1 {
		t.Fatalf("retry hint %v (want true), handler ran %d times (want 1)", r.Retry, ran.Load())
	}
	for end := time.Now().Add(testwait.Timeout); ; {
		r = c(t.Context(), Request{Key: "x"})
		if r.Status == OK {
			break
		}
		expect(t, "resubmit before the window ended", r, Busy)
		if time.Now().After(end) {
			t.Fatalf("still busy %v after a %v window", testwait.Timeout, window)
		}
		time.Sleep(10 * time.Millisecond) // polling for the window's end
	}
	if took := time.Since(start); took < window {
		t.Fatalf("a resubmit ran %v after the first, inside the %v window", took, window)
	}
	control := tr.Lock(t, lk, `key:"conf:nokeep:%s"`, h)
	expect(t, "control: first", control(t.Context(), Request{Key: "x"}), OK)
	expect(t, "control: resubmit without keep", control(t.Context(), Request{Key: "x"}), OK)
}

// keepFailure: a handler that fails does not keep the lock: the retry
// runs at once.
func keepFailure(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	var calls atomic.Int64
	c := tr.Lock(t, newLocker(t, srv), `key:"conf:keepf:%s" keep:"1m"`, func(context.Context) (int64, error) {
		if calls.Add(1) == 1 {
			return 0, errors.New("conformance: handler failed")
		}
		return 2, nil
	})
	c(t.Context(), Request{Key: "x"}) // HTTP: nothing written, the server's default answer
	if calls.Load() != 1 {
		t.Fatalf("the failing handler ran %d times, want 1", calls.Load())
	}
	expect(t, "retry after a failure", c(t.Context(), Request{Key: "x"}), OK)
	expect(t, "resubmit after a success", c(t.Context(), Request{Key: "x"}), Busy)
}
