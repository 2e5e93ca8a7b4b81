package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// Run runs the whole table against tr, each case on redis-servers of its
// own.
func Run(t *testing.T, tr Transport) {
	cases := []struct {
		name string
		run  func(t *testing.T, tr Transport)
	}{
		{"serialise", serialise},
		{"serialise-control", serialiseControl},
		{"parallel-keys", parallelKeys},
		{"busy", busy},
		{"limit", limit},
		{"limit-control", limitControl},
		{"limit-full", limitFull},
		{"read-write", readWrite},
		{"multi-key", multiKey},
		{"multi-key-control", multiKeyControl},
		{"multi-key-busy", multiKeyBusy},
		{"keep", keep},
		{"keep-failure", keepFailure},
		{"redis-down", redisDown},
		{"invalid-key", invalidKey},
		{"lock-name", lockName},
		{"lock-lost", lockLost},
		{"panic-releases", panicReleases},
		{"rate", rate},
		{"rate-control", rateControl},
		{"rate-before-lock", rateBeforeLock},
		{"rate-before-lock-control", rateBeforeLockControl},
		{"idempotency", idempotency},
		{"idempotency-down", idempotencyDown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, tr) })
	}
}

func newLocker(t testing.TB, srv *redistest.Server, opts ...locker.Option) *locker.Locker {
	t.Helper()
	lk, err := locker.New(redigo.New(srv.Pool(t)), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

func expect(t *testing.T, what string, got Result, want Status) {
	t.Helper()
	if got.Status != want {
		t.Fatalf("%s: got %v, want %v (%s)", what, got.Status, want, got.Detail)
	}
}

// overlap is the detector: holders per key must never exceed 1.
type overlap struct {
	holders, max atomic.Int64
	ran          atomic.Int64
}

// hold is a handler that counts itself as a holder for up to window, and
// leaves early once another holder shows up (so a broken lock is seen
// at once, and a working one costs window per request).
func (o *overlap) hold(window time.Duration) Handler {
	return func(ctx context.Context) (int64, error) {
		n := o.holders.Add(1)
		defer o.holders.Add(-1)
		o.ran.Add(1)
		for {
			if m := o.max.Load(); n > m && !o.max.CompareAndSwap(m, n) {
				continue
			}
			break
		}
		for end := time.Now().Add(window); time.Now().Before(end) && o.max.Load() < 2; {
			time.Sleep(200 * time.Microsecond) // polling the detector, not waiting for an event
		}
		return n, nil
	}
}

// burst sends n requests for key at once, request i through clients[i%len].
func burst(t *testing.T, clients []Client, n int, key string) []Result {
	t.Helper()
	out := make([]Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i] = clients[i%len(clients)](t.Context(), Request{Key: key}) })
	}
	wg.Wait()
	return out
}

const serialTag = `key:"conf:ser:%s" wait:"10s"`

// serialise: concurrent requests on one key never overlap.
func serialise(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	var o overlap
	c := tr.Lock(t, newLocker(t, srv), serialTag, o.hold(10*time.Millisecond))
	for i, r := range burst(t, []Client{c}, 8, "one") {
		expect(t, fmt.Sprint("request ", i), r, OK)
	}
	if m := o.max.Load(); m != 1 || o.ran.Load() != 8 {
		t.Fatalf("max holders %d (want 1), ran %d (want 8)", m, o.ran.Load())
	}
}

// serialiseControl breaks the lock — each request through a Locker with a
// key prefix of its own, so no two share a Redis key — and asserts that the
// detector catches it.
func serialiseControl(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	var o overlap
	h := o.hold(testwait.Timeout / 2)
	clients := make([]Client, 8)
	for i := range clients {
		clients[i] = tr.Lock(t, newLocker(t, srv, locker.WithKeyPrefix(fmt.Sprintf("broken%d:", i))), serialTag, h)
	}
	burst(t, clients, len(clients), "one")
	if m := o.max.Load(); m < 2 {
		t.Fatalf("control: the detector saw max %d holders under a broken lock; it cannot catch an overlap", m)
	}
	t.Logf("control: broken lock caught, max holders %d", o.max.Load())
}

// parallelKeys: two keys are held at the same time (each handler waits
// for the other to be inside).
func parallelKeys(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	var in sync.WaitGroup
	in.Add(2)
	both := make(chan struct{})
	go func() { in.Wait(); close(both) }()
	c := tr.Lock(t, newLocker(t, srv), `key:"conf:par:%s" wait:"0s"`, func(ctx context.Context) (int64, error) {
		in.Done()
		select {
		case <-both:
			return 1, nil
		case <-time.After(testwait.Timeout / 2):
			return 0, errors.New("the other key's handler never ran meanwhile")
		}
	})
	var wg sync.WaitGroup
	res := make([]Result, 2)
	for i, k := range []string{"a", "b"} {
		wg.Go(func() { res[i] = c(t.Context(), Request{Key: k}) })
	}
	wg.Wait()
	expect(t, "key a", res[0], OK)
	expect(t, "key b", res[1], OK)
}

// busy: a held key is the busy status with a retry hint after the wait.
func busy(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	var ran atomic.Int64
	c := tr.Lock(t, lk, `key:"conf:busy:%s" wait:"50ms"`, func(context.Context) (int64, error) { ran.Add(1); return 1, nil })
	held, err := lk.Obtain(t.Context(), "conf:busy:x", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	r := c(t.Context(), Request{Key: "x"})
	expect(t, "while held", r, Busy)
	if !r.Retry || ran.Load() != 0 {
		t.Fatalf("retry hint %v (want true), handler ran %d times (want 0)", r.Retry, ran.Load())
	}
	if err := held.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	expect(t, "after release", c(t.Context(), Request{Key: "x"}), OK)
}

// redisDown: unavailable with a retry hint; the handler never runs.
func redisDown(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	var ran atomic.Int64
	c := tr.Lock(t, newLocker(t, srv), `key:"conf:down:%s" wait:"1s"`, func(context.Context) (int64, error) { ran.Add(1); return 1, nil })
	srv.Stop()
	r := c(t.Context(), Request{Key: "x"})
	expect(t, "redis down", r, Unavailable)
	if !r.Retry || ran.Load() != 0 {
		t.Fatalf("retry hint %v (want true), handler ran %d times (want 0)", r.Retry, ran.Load())
	}
}

// invalidKey: missing, empty and over-long values are invalid before
// Redis is touched — Redis is down, and the answer is still invalid.
func invalidKey(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	var ran atomic.Int64
	c := tr.Lock(t, newLocker(t, srv), `key:"conf:inv:%s" wait:"1s"`, func(context.Context) (int64, error) { ran.Add(1); return 1, nil })
	srv.Stop()
	for name, req := range map[string]Request{
		"missing":   {NoKey: true},
		"empty":     {Key: ""},
		"oversized": {Key: strings.Repeat("x", 257)}, // keyexpr.DefaultMaxValueLen + 1
	} {
		expect(t, name, c(t.Context(), req), Invalid)
	}
	if ran.Load() != 0 {
		t.Fatalf("handler ran %d times", ran.Load())
	}
}

// lockLost: the lock's key deleted under a running handler; the watchdog's
// next renewal finds it gone and cancels the handler's context with
// locker.ErrLockLost. The answer carries a retry hint.
func lockLost(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv, locker.WithWatchdog(300*time.Millisecond, 50*time.Millisecond))
	started, cause := make(chan struct{}), make(chan error, 1)
	c := tr.Lock(t, lk, `key:"conf:lost:%s"`, func(ctx context.Context) (int64, error) {
		close(started)
		select {
		case <-ctx.Done():
			cause <- context.Cause(ctx)
			return 0, context.Cause(ctx)
		case <-time.After(testwait.Timeout):
			cause <- errors.New("handler context never cancelled")
			return 0, errors.New("not lost")
		}
	})
	res := make(chan Result, 1)
	go func() { res <- c(t.Context(), Request{Key: "x"}) }()
	testwait.Recv(t, started, "the handler to start")
	if n, err := srv.Do("DEL", "locktag:{conf:lost:x}"); err != nil || n != int64(1) {
		t.Fatalf("DEL the lock: %v, %v", n, err)
	}
	if err := testwait.Recv(t, cause, "the handler's context to end"); !errors.Is(err, locker.ErrLockLost) {
		t.Fatalf("cause %v, want locker.ErrLockLost", err)
	}
	r := testwait.Recv(t, res, "the answer")
	expect(t, "lost", r, Lost)
	if !r.Retry {
		t.Fatal("lost lock answered without a retry hint")
	}
}

// panicReleases: a panicking handler's lock is released before the
// transport's panic handling answers, so the next request (no wait) gets it.
func panicReleases(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	var calls atomic.Int64
	c := tr.Lock(t, newLocker(t, srv), `key:"conf:panic:%s"`, func(context.Context) (int64, error) {
		if calls.Add(1) == 1 {
			panic("conformance: handler panic")
		}
		return 2, nil
	})
	if r := c(t.Context(), Request{Key: "x"}); r.Status == OK {
		t.Fatalf("panicking handler answered OK (%s)", r.Detail)
	}
	expect(t, "after the panic", c(t.Context(), Request{Key: "x"}), OK)
	if n, err := srv.Do("EXISTS", "locktag:{conf:panic:x}"); err != nil || n != int64(0) {
		t.Fatalf("lock key exists: %v, %v", n, err)
	}
}
