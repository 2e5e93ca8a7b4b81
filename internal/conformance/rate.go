package conformance

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

const rateTag = `key:"conf:rate:%s" rate:"3/1m"`

// rate: a `rate:"3/1m"` tag admits the burst of 3 and refuses the 4th as
// rate-limited, with the time to the next slot (20s) and the quota; the
// handler ran 3 times; another key has a bucket of its own.
func rate(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	var ran atomic.Int64
	c := tr.Lock(t, newLocker(t, srv), rateTag, func(context.Context) (int64, error) { ran.Add(1); return 1, nil })
	for i := range 3 {
		expect(t, fmt.Sprint("request ", i), c(t.Context(), Request{Key: "x"}), OK)
	}
	r := c(t.Context(), Request{Key: "x"})
	expect(t, "fourth request", r, RateLimited)
	if !r.Retry || !r.Quota || r.RetryIn < 19*time.Second || r.RetryIn > 20*time.Second || ran.Load() != 3 {
		t.Fatalf("retry hint %v (%v, want 19-20s), quota %v (want true), handler ran %d times (want 3)", r.Retry, r.RetryIn, r.Quota, ran.Load())
	}
	expect(t, "another key", c(t.Context(), Request{Key: "y"}), OK)
}

// rateControl breaks the limit — each client's Locker has a key prefix
// of its own, so each has a bucket of its own — and asserts that counting
// the handler's runs catches it: 8 requests, 8 runs, over a limit of 3.
func rateControl(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	var ran atomic.Int64
	h := func(context.Context) (int64, error) { ran.Add(1); return 1, nil }
	clients := make([]Client, 4)
	for i := range clients {
		clients[i] = tr.Lock(t, newLocker(t, srv, locker.WithKeyPrefix(fmt.Sprintf("broken%d:", i))), rateTag, h)
	}
	burst(t, append(clients, clients...), 8, "x")
	if n := ran.Load(); n <= 3 {
		t.Fatalf("control: a broken limit of 3 ran the handler %d times; counting cannot catch it", n)
	}
}

// rateBeforeLock: a rate tag chained before a lock tag refuses at once a
// request over the rate while the lock is held — it never queues for the
// lock (queued, it would be busy after the lock's 5s wait).
func rateBeforeLock(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	c := tr.Chain(t, lk, []string{`key:"conf:rl:%s" rate:"1/1m"`, `key:"conf:rl:%s" wait:"5s"`},
		func(context.Context) (int64, error) { return 1, nil })
	expect(t, "first", c(t.Context(), Request{Key: "x"}), OK)
	held, err := lk.Obtain(t.Context(), "conf:rl:x", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Release(context.Background()) }()
	r := c(t.Context(), Request{Key: "x"})
	expect(t, "over the rate while the lock is held", r, RateLimited)
	if !r.Quota {
		t.Fatal("rate-limited without the quota")
	}
	if st, err := lk.Inspect(t.Context(), "conf:rl:x"); err != nil || st.Queued != 0 {
		t.Fatalf("the lock's queue: %+v, %v", st, err)
	}
}

// rateBeforeLockControl chains the same tags the other way round: the
// request over the rate queues for the held lock first and is busy after
// the lock's wait, so the order is what rateBeforeLock sees.
func rateBeforeLockControl(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	c := tr.Chain(t, lk, []string{`key:"conf:lr:%s" wait:"200ms"`, `key:"conf:lr:%s" rate:"1/1m"`},
		func(context.Context) (int64, error) { return 1, nil })
	expect(t, "first", c(t.Context(), Request{Key: "x"}), OK)
	held, err := lk.Obtain(t.Context(), "conf:lr:x", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Release(context.Background()) }()
	expect(t, "control: lock first, lock held", c(t.Context(), Request{Key: "x"}), Busy)
}
