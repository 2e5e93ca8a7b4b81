package single

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/protocol"
	"github.com/locktag/locktag/locker/redigo"
)

// testBackend is a Backend on a real server, with the waits its Waiting
// hook saw.
type testBackend struct {
	*Backend
	srv     *redistest.Server
	waiting atomic.Int32 // waits begun and not yet ended
	waits   atomic.Int32 // waits begun
}

// newBackend returns a backend on srv under the key prefix "t:" with a
// grant window of 250ms, as a Locker of its own (its own subscriber id),
// closed when the test ends.
func newBackend(t *testing.T, srv *redistest.Server) *testBackend {
	t.Helper()
	tb := &testBackend{srv: srv}
	hooks := backend.Hooks{Waiting: func(any) func() {
		tb.waits.Add(1)
		tb.waiting.Add(1)
		return func() { tb.waiting.Add(-1) }
	}}
	sh := backend.NewShared(backend.Config{Prefix: "t:", Bounds: callctx.Bounds{Timeout: 2 * time.Second}}, 250*time.Millisecond, false, hooks)
	tb.Backend = New(sh, backend.New(redigo.New(srv.Pool(t)), sh), true)
	t.Cleanup(func() { _ = tb.Close() })
	return tb
}

// holder returns the names of key's mutex for a new holder, and its
// token, with its first try's arguments for ttl and wait as Obtain makes
// them.
func (tb *testBackend) holder(key string, ttl, wait time.Duration) (protocol.Names, string) {
	buf := new(protocol.Buf)
	n, token := tb.Layout.Mutex(key, buf)
	return n.WithFirstArgs(buf, tb.MSArg(ttl), tb.MSArg(wait), tb.SIDArg, tb.WindowArg), token
}

// semHolder is holder for a semaphore of limit permits.
func (tb *testBackend) semHolder(key string, limit int, ttl, wait time.Duration) (protocol.Names, string) {
	buf := new(protocol.Buf)
	n, token := tb.Layout.Semaphore(key, limit, buf)
	return n.WithFirstArgs(buf, tb.MSArg(ttl), tb.MSArg(wait), tb.SIDArg, tb.WindowArg), token
}

// obtain obtains key for a new holder under Terms{TTL: ttl, Wait: wait}.
func (tb *testBackend) obtain(ctx context.Context, key string, ttl, wait time.Duration) (protocol.Names, string, backend.Held, error) {
	n, token := tb.holder(key, ttl, wait)
	h, err := tb.Obtain(ctx, key, n, token, backend.Terms{TTL: ttl, Wait: wait})
	return n, token, h, err
}

// mustObtain is obtain without a wait that must succeed.
func (tb *testBackend) mustObtain(t *testing.T, key string, ttl time.Duration) (protocol.Names, string, backend.Held) {
	t.Helper()
	n, token, h, err := tb.obtain(context.Background(), key, ttl, 0)
	if err != nil {
		t.Fatalf("Obtain %s: %v", key, err)
	}
	return n, token, h
}

// owner reads the owner token and hold count of key's mutex in Redis
// ("", 0: no lock).
func owner(t *testing.T, srv *redistest.Server, key string) (string, int) {
	t.Helper()
	v, err := redis.String(srv.Do("GET", "t:{"+key+"}"))
	if errors.Is(err, redis.ErrNil) {
		return "", 0
	}
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(v)
	holds, _ := strconv.Atoi(f[2])
	return f[0], holds
}

// inQueue is the count of waiters queued in Redis for key's mutex.
func inQueue(t *testing.T, srv *redistest.Server, key string) int {
	t.Helper()
	n, err := redis.Int(srv.Do("ZCARD", "t:{"+key+"}:q"))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestObtainFreeAndBusy: a free lock is granted for the whole TTL to the
// caller's token; a busy one is refused at once without a wait, and the
// refused caller is not queued.
func TestObtainFreeAndBusy(t *testing.T) {
	srv := redistest.Start(t)
	tb := newBackend(t, srv)
	ctx := context.Background()
	before := time.Now()
	n, token, h := tb.mustObtain(t, "k", 10*time.Second)
	if h.Fence <= 0 || h.Granted != 10*time.Second || h.At.Before(before) || h.At.After(time.Now()) {
		t.Fatalf("held %+v, want a fence, the whole TTL, granted during the call", h)
	}
	if o, holds := owner(t, srv, "k"); o != token || holds != 1 {
		t.Fatalf("lock owned by %q with %d holds, want %q with 1", o, holds, token)
	}
	if left, err := tb.PTTL(ctx, n, token); err != nil || left <= 0 || left > 10*time.Second {
		t.Fatalf("PTTL %v %v, want in (0, 10s]", left, err)
	}

	n2, token2, _, err := tb.obtain(ctx, "k", 10*time.Second, 0)
	if !errors.Is(err, lockerr.ErrNotObtained) {
		t.Fatalf("busy lock: %v, want ErrNotObtained", err)
	}
	if q := inQueue(t, srv, "k"); q != 0 {
		t.Fatalf("%d queued after a refusal without a wait", q)
	}
	if _, err := tb.PTTL(ctx, n2, token2); !errors.Is(err, lockerr.ErrNotHeld) {
		t.Fatalf("PTTL of a refused caller: %v, want ErrNotHeld", err)
	}
}

// TestHeldLockCalls: re-entry, extension, keep and release act on the
// holder's token only, and each reports another token's call as not
// held; the last hold's release frees the lock.
func TestHeldLockCalls(t *testing.T) {
	srv := redistest.Start(t)
	tb := newBackend(t, srv)
	ctx := context.Background()
	n, token, _ := tb.mustObtain(t, "k", 10*time.Second)
	other, otherToken := tb.holder("k", 10*time.Second, 0)

	if holds, ok, err := tb.Reenter(ctx, n, token, 10*time.Second); err != nil || !ok || holds != 2 {
		t.Fatalf("re-entry: %d holds, ok %v, err %v; want 2, true", holds, ok, err)
	}
	if _, ok, err := tb.Reenter(ctx, other, otherToken, 10*time.Second); err != nil || ok {
		t.Fatalf("re-entry by another token: ok %v, err %v; want refused", ok, err)
	}
	if ok, err := tb.Extend(ctx, other, otherToken, time.Minute); err != nil || ok {
		t.Fatalf("extend by another token: ok %v, err %v; want refused", ok, err)
	}
	if ok, err := tb.Extend(ctx, n, token, time.Minute); err != nil || !ok {
		t.Fatalf("extend: ok %v, err %v", ok, err)
	}
	if left, _ := tb.PTTL(ctx, n, token); left <= 10*time.Second {
		t.Fatalf("lease %v after an extension to 1m", left)
	}
	if err := tb.Release(ctx, other, otherToken, time.Minute); !errors.Is(err, lockerr.ErrNotHeld) {
		t.Fatalf("release by another token: %v, want ErrNotHeld", err)
	}
	if err := tb.Keep(ctx, other, otherToken, time.Minute, time.Minute); !errors.Is(err, lockerr.ErrNotHeld) {
		t.Fatalf("keep by another token: %v, want ErrNotHeld", err)
	}
	if err := tb.Release(ctx, n, token, time.Minute); err != nil {
		t.Fatalf("release of the inner hold: %v", err)
	}
	if o, holds := owner(t, srv, "k"); o != token || holds != 1 {
		t.Fatalf("after the inner release: owner %q, %d holds; want %q, 1", o, holds, token)
	}
	if err := tb.Release(ctx, n, token, time.Minute); err != nil {
		t.Fatalf("release of the last hold: %v", err)
	}
	if o, _ := owner(t, srv, "k"); o != "" {
		t.Fatalf("lock still owned by %q after the last release", o)
	}
	if err := tb.Release(ctx, n, token, time.Minute); !errors.Is(err, lockerr.ErrNotHeld) {
		t.Fatalf("release after the last: %v, want ErrNotHeld", err)
	}

	// Keep: the last hold keeps the lock busy for the window.
	kn, ktoken, _ := tb.mustObtain(t, "kept", time.Second)
	if err := tb.Keep(ctx, kn, ktoken, time.Second, time.Minute); err != nil {
		t.Fatalf("keep: %v", err)
	}
	if _, _, _, err := tb.obtain(ctx, "kept", time.Second, 0); !errors.Is(err, lockerr.ErrNotObtained) {
		t.Fatalf("obtain within the kept window: %v, want ErrNotObtained", err)
	}
	if pttl, _ := redis.Int64(srv.Do("PTTL", "t:{kept}")); pttl <= time.Second.Milliseconds() || pttl > time.Minute.Milliseconds() {
		t.Fatalf("kept lock expires in %dms, want within the minute kept", pttl)
	}
}

// TestHandOver: a waiting Obtain queues in Redis and is handed the lock
// by the holder's release, long before the holder's lease would have
// ended, whether it waits on the releasing backend (see
// TestReleaseWakesLocalWaiter) or on another (the published grant); the
// Waiting hook spans the wait.
func TestHandOver(t *testing.T) {
	srv := redistest.Start(t)
	tb := newBackend(t, srv)
	for _, c := range []struct {
		name   string
		waiter *testBackend
	}{
		{"same backend", tb},
		{"another backend", newBackend(t, srv)},
	} {
		key := "k-" + strings.ReplaceAll(c.name, " ", "-")
		n, token, h := tb.mustObtain(t, key, time.Minute) // a lease longer than any wait here
		type result struct {
			token string
			h     backend.Held
			err   error
		}
		got := make(chan result, 1)
		go func() {
			_, wtoken, wh, err := c.waiter.obtain(context.Background(), key, time.Minute, 20*time.Second)
			got <- result{wtoken, wh, err}
		}()
		testwait.Eventually(t, c.name+": the waiter queued", func() bool { return inQueue(t, srv, key) == 1 })
		testwait.Eventually(t, c.name+": the wait reported", func() bool { return c.waiter.waiting.Load() == 1 })
		if err := tb.Release(context.Background(), n, token, time.Minute); err != nil {
			t.Fatalf("%s: release: %v", c.name, err)
		}
		// Recv's bound is well within the holder's lease: the release
		// handed it over.
		r := testwait.Recv(t, got, c.name+": the hand-over")
		if r.err != nil {
			t.Fatalf("%s: waiter: %v", c.name, r.err)
		}
		if o, _ := owner(t, srv, key); o != r.token {
			t.Fatalf("%s: lock owned by %q, want the waiter %q", c.name, o, r.token)
		}
		if r.h.Fence <= h.Fence || r.h.Granted <= 0 || r.h.Granted > time.Minute {
			t.Fatalf("%s: waiter's grant %+v after the holder's fence %d, want a larger fence and a lease", c.name, r.h, h.Fence)
		}
		if q := inQueue(t, srv, key); q != 0 {
			t.Fatalf("%s: %d still queued", c.name, q)
		}
		if c.waiter.waiting.Load() != 0 || c.waiter.waits.Load() != 1 {
			t.Fatalf("%s: Waiting hook: %d waits, %d not ended; want 1, 0", c.name, c.waiter.waits.Load(), c.waiter.waiting.Load())
		}
		c.waiter.waits.Store(0)
	}
}

// TestReleaseWakesLocalWaiter: a release that hands the lock to a waiter
// of its own Locker wakes that waiter from the release's reply (no notice
// is published for it), with the whole lease and the time the release was
// sent as a lower bound of the grant's.
func TestReleaseWakesLocalWaiter(t *testing.T) {
	srv := redistest.Start(t)
	tb := newBackend(t, srv)
	ctx := context.Background()
	n, token, h := tb.mustObtain(t, "k", time.Minute)
	wn, wtoken := tb.holder("k", 30*time.Second, 20*time.Second)
	w := tb.nd.Hub.Register(wtoken)
	defer tb.nd.Hub.Unregister(w)
	// Queued as Obtain's first try queues it.
	if r, err := tb.acquire(ctx, wn, 30*time.Second, 20*time.Second, protocol.AcquireNew, nil); err != nil || r.Status != protocol.StatusBusy {
		t.Fatalf("waiter's try: %+v %v, want queued", r, err)
	}
	sent := time.Now()
	if err := tb.Release(ctx, n, token, time.Minute); err != nil {
		t.Fatal(err)
	}
	g := testwait.Recv(t, w.Grant, "the grant from the release's reply")
	if g.Fence <= h.Fence || g.PTTL != 30*time.Second || g.After.Before(sent) || g.After.After(time.Now()) {
		t.Fatalf("grant %+v (holder's fence %d), want a larger fence, the waiter's whole 30s, after the release was sent", g, h.Fence)
	}
	if o, _ := owner(t, srv, "k"); o != wtoken {
		t.Fatalf("lock owned by %q, want the waiter %q", o, wtoken)
	}
}

// TestWaitEnds: a wait ends when its time is up (ErrNotObtained, not
// before), when its context ends (joined with ctx's error) or when the
// Locker closes (ErrClosed); each time the waiter has left the queue.
func TestWaitEnds(t *testing.T) {
	srv := redistest.Start(t)
	tb := newBackend(t, srv)
	tb.mustObtain(t, "k", time.Minute)

	const wait = 150 * time.Millisecond
	start := time.Now()
	if _, _, _, err := tb.obtain(context.Background(), "k", time.Minute, wait); !errors.Is(err, lockerr.ErrNotObtained) {
		t.Fatalf("wait ran out: %v, want ErrNotObtained", err)
	}
	if d := time.Since(start); d < wait {
		t.Fatalf("gave up after %v, before the wait of %v", d, wait)
	}
	if q := inQueue(t, srv, "k"); q != 0 {
		t.Fatalf("%d queued after the wait ran out", q)
	}

	for _, c := range []struct {
		name string
		want []error
	}{{"cancelled", []error{lockerr.ErrNotObtained, context.Canceled}}, {"closing", []error{lockerr.ErrClosed}}} {
		ctx, cancel := context.WithCancel(context.Background())
		closing := make(chan struct{})
		errc := make(chan error, 1)
		go func() {
			n, token := tb.holder("k", time.Minute, 20*time.Second)
			_, err := tb.Obtain(ctx, "k", n, token, backend.Terms{TTL: time.Minute, Wait: 20 * time.Second, Closing: closing})
			errc <- err
		}()
		testwait.Eventually(t, c.name+": the waiter queued", func() bool { return inQueue(t, srv, "k") == 1 })
		if c.name == "cancelled" {
			cancel()
		} else {
			close(closing)
		}
		err := testwait.Recv(t, errc, c.name+": the wait's end")
		for _, w := range c.want {
			if !errors.Is(err, w) {
				t.Fatalf("%s: %v, want it to match %v", c.name, err, w)
			}
		}
		// Left at once, or off the caller's path when the wait ended
		// during a call (a re-check, the subscription).
		testwait.Eventually(t, c.name+": the waiter gone from the queue", func() bool { return inQueue(t, srv, "k") == 0 })
		cancel()
	}
}

// TestSemaphore: a semaphore grants up to its limit of holders at once;
// a release hands the freed permit to a waiter.
func TestSemaphore(t *testing.T) {
	srv := redistest.Start(t)
	tb := newBackend(t, srv)
	ctx := context.Background()
	take := func(wait time.Duration) (protocol.Names, string, error) {
		n, token := tb.semHolder("s", 2, time.Minute, wait)
		_, err := tb.Obtain(ctx, "s", n, token, backend.Terms{TTL: time.Minute, Wait: wait})
		return n, token, err
	}
	n1, t1, err1 := take(0)
	_, _, err2 := take(0)
	if err1 != nil || err2 != nil {
		t.Fatalf("two permits of two: %v, %v", err1, err2)
	}
	if _, _, err := take(0); !errors.Is(err, lockerr.ErrNotObtained) {
		t.Fatalf("a third permit of two: %v, want ErrNotObtained", err)
	}
	errc := make(chan error, 1)
	go func() { _, _, err := take(20 * time.Second); errc <- err }()
	testwait.Eventually(t, "the third holder waiting", func() bool { return tb.waiting.Load() == 1 })
	if err := tb.Release(ctx, n1, t1, time.Minute); err != nil {
		t.Fatalf("release of a permit: %v", err)
	}
	if err := testwait.Recv(t, errc, "the freed permit handed over"); err != nil {
		t.Fatalf("waiting holder: %v", err)
	}
}

// TestTakeAll: ObtainMany's one script takes every free lock with one
// fence each, and takes none when one is held.
func TestTakeAll(t *testing.T) {
	srv := redistest.Start(t)
	tb := newBackend(t, srv)
	ctx := context.Background()
	if !tb.FastOn() {
		t.Fatal("the one-script path is off on one server")
	}
	nx, tx := tb.holder("x", time.Minute, 0)
	ny, ty := tb.holder("y", time.Minute, 0)
	fences, ok, err := tb.TakeAll(ctx, []protocol.Names{nx, ny}, []string{tx, ty}, time.Minute)
	if err != nil || !ok || len(fences) != 2 || fences[0] <= 0 || fences[1] <= 0 {
		t.Fatalf("TakeAll of free locks: %v %v %v", fences, ok, err)
	}
	if ox, _ := owner(t, srv, "x"); ox != tx {
		t.Fatalf("x owned by %q, want %q", ox, tx)
	}
	if oy, _ := owner(t, srv, "y"); oy != ty {
		t.Fatalf("y owned by %q, want %q", oy, ty)
	}

	nz, tz := tb.holder("z", time.Minute, 0)
	nx2, tx2 := tb.holder("x", time.Minute, 0)
	if _, ok, err := tb.TakeAll(ctx, []protocol.Names{nz, nx2}, []string{tz, tx2}, time.Minute); ok || err != nil {
		t.Fatalf("TakeAll with x held: ok %v, err %v; want not taken", ok, err)
	}
	if oz, _ := owner(t, srv, "z"); oz != "" {
		t.Fatalf("z taken by %q though x was held", oz)
	}
}

// TestAdmin: one deployment is its own quorum of one, and a
// force-release hands the lock over in grant mode.
func TestAdmin(t *testing.T) {
	srv := redistest.Start(t)
	tb := newBackend(t, srv)
	nodes, need := tb.Quorum()
	if len(nodes) != 1 || need != 1 || nodes[0] != tb.nd {
		t.Fatalf("quorum %d of %d nodes, want the one node", need, len(nodes))
	}
	if mode, window := tb.Handoff(); mode != protocol.HandoffGrant || window != tb.WindowArg {
		t.Fatalf("hand-off %q %v, want grant mode with the grant window", mode, window)
	}
	ms, err := tb.Masters(context.Background())
	if err != nil || len(ms) != 1 || ms[0] != tb.nd.Drv {
		t.Fatalf("masters %v %v, want the node's driver", ms, err)
	}
}

// TestUnavailable: with the server down every call fails with an error
// matching ErrUnavailable, and Obtain does not report a busy lock.
func TestUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	tb := newBackend(t, srv)
	ctx := context.Background()
	n, token, _ := tb.mustObtain(t, "k", time.Minute)
	srv.Stop()
	if _, _, _, err := tb.obtain(ctx, "other", time.Minute, 0); !errors.Is(err, lockerr.ErrUnavailable) || errors.Is(err, lockerr.ErrNotObtained) {
		t.Errorf("obtain: %v, want ErrUnavailable only", err)
	}
	if _, err := tb.Extend(ctx, n, token, time.Minute); !errors.Is(err, lockerr.ErrUnavailable) {
		t.Errorf("extend: %v, want ErrUnavailable", err)
	}
	if _, err := tb.PTTL(ctx, n, token); !errors.Is(err, lockerr.ErrUnavailable) {
		t.Errorf("ttl: %v, want ErrUnavailable", err)
	}
	if err := tb.Keep(ctx, n, token, time.Minute, time.Second); !errors.Is(err, lockerr.ErrUnavailable) {
		t.Errorf("keep: %v, want ErrUnavailable", err)
	}
	if err := tb.Release(ctx, n, token, time.Minute); !errors.Is(err, lockerr.ErrUnavailable) {
		t.Errorf("release: %v, want ErrUnavailable", err)
	}
	if err := tb.Healthy(ctx); !errors.Is(err, lockerr.ErrUnavailable) {
		t.Errorf("healthy: %v, want ErrUnavailable", err)
	}
}
