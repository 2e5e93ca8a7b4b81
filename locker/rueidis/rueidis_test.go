package rueidis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	lockrueidis "github.com/locktag/locktag/locker/rueidis"
)

// The locker's basic behaviours through this driver on one redis-server.

func TestObtainBusyRelease(t *testing.T) {
	srv := redistest.Start(t)
	a := newLocker(t, plainClient(t, srv))
	b := newLocker(t, plainClient(t, srv))
	ctx := context.Background()

	le := mustObtain(t, a, ctx, "order:1", locker.Params{TTL: 10 * time.Second})
	if _, err := b.Obtain(ctx, "order:1", locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("second Obtain: %v, want ErrNotObtained", err)
	}
	if d, err := le.TTL(ctx); err != nil || d <= 0 || d > 10*time.Second {
		t.Fatalf("TTL = %v, %v", d, err)
	}
	mustRelease(t, le)
	if err := le.Release(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("second Release: %v, want ErrNotHeld", err)
	}
	le = mustObtain(t, b, ctx, "order:1", locker.Params{})
	mustRelease(t, le)
}

// Over RESP3 (rueidis' default) and RESP2: replies and pub/sub messages
// are framed differently.
func TestWaitWakesByNotification(t *testing.T) {
	for _, resp2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "RESP3", true: "RESP2"}[resp2], func(t *testing.T) {
			srv := redistest.Start(t)
			resp := func(o *rueidis.ClientOption) { o.AlwaysRESP2, o.DisableCache = resp2, resp2 }
			holder := newLocker(t, plainClient(t, srv, resp))
			c := plainClient(t, srv, resp)
			waiter := newLocker(t, c)
			took := waitHandOver(t, holder, waiter, c, "order:2")
			// By its safety timer the waiter would wake after the
			// holder's 30s lease; a notification takes a few round trips
			// (generous bound for a loaded machine).
			if took > 5*time.Second {
				t.Fatalf("waiter woke %v after the release: not by notification", took)
			}
		})
	}
}

func TestReentrancyAndFencing(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, plainClient(t, srv))
	ctx := context.Background()

	outer := mustObtain(t, lk, ctx, "cart:7", locker.Params{})
	inner := mustObtain(t, lk, outer.Context(), "cart:7", locker.Params{})
	if inner.Holds() != 2 || inner.Token() != outer.Token() {
		t.Fatalf("inner: holds %d token %d, outer token %d", inner.Holds(), inner.Token(), outer.Token())
	}
	mustRelease(t, inner)
	if _, err := lk.Obtain(ctx, "cart:7", locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("Obtain after inner release: %v, want ErrNotObtained", err)
	}
	mustRelease(t, outer)

	last := outer.Token()
	for range 3 {
		le := mustObtain(t, lk, ctx, "cart:7", locker.Params{})
		if le.Token() <= last {
			t.Fatalf("fencing token %d not above %d", le.Token(), last)
		}
		last = le.Token()
		mustRelease(t, le)
	}
}

// A SCRIPT FLUSH (or a restarted server) costs an EVAL, never an error.
func TestScriptFlushFallsBackToEval(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, plainClient(t, srv))
	ctx := context.Background()
	mustRelease(t, mustObtain(t, lk, ctx, "k", locker.Params{}))
	if _, err := srv.Do("SCRIPT", "FLUSH"); err != nil {
		t.Fatal(err)
	}
	before := commandCalls(t, srv, "eval")
	mustRelease(t, mustObtain(t, lk, ctx, "k", locker.Params{}))
	if n := commandCalls(t, srv, "eval") - before; n != 2 {
		t.Fatalf("%d EVAL calls after SCRIPT FLUSH for an obtain and a release, want 2", n)
	}
}

// A nil reply is a nil value; an unknown SHA falls back to EVAL. A
// Script with an empty source, which Redis runs and answers with nil.
func TestEvalNilReply(t *testing.T) {
	srv := redistest.Start(t)
	d := lockrueidis.New(plainClient(t, srv))
	v, err := d.Eval(context.Background(), driver.NewScript(""), driver.Keys{})
	if v != nil || err != nil {
		t.Fatalf("Eval of an empty script = %#v, %v; want nil, nil", v, err)
	}
}

// Eval honours ctx's deadline while Redis answers nothing (CLIENT PAUSE),
// with rueidis' own timeouts far longer; so does EvalAck.
func TestEvalHonoursDeadline(t *testing.T) {
	srv := redistest.Start(t)
	d := lockrueidis.New(plainClient(t, srv, func(o *rueidis.ClientOption) { o.ConnWriteTimeout = 30 * time.Second }))
	ctx := context.Background()
	if _, err := d.Eval(ctx, driver.NewScript(""), driver.Keys{}); err != nil { // connection ready
		t.Fatal(err)
	}
	if _, err := srv.Do("CLIENT", "PAUSE", "3000", "ALL"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = srv.Do("CLIENT", "UNPAUSE") })
	for name, call := range map[string]func(context.Context) error{
		"Eval": func(ctx context.Context) error {
			_, err := d.Eval(ctx, driver.NewScript(""), driver.Keys{})
			return err
		},
		"EvalAck": func(ctx context.Context) error {
			_, _, err := d.(driver.Acker).EvalAck(ctx, 1, time.Second, driver.NewScript(""), driver.Keys{})
			return err
		},
	} {
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		start := time.Now()
		err := call(cctx)
		cancel()
		if took := time.Since(start); took > 1500*time.Millisecond {
			t.Fatalf("%s returned after %v, its deadline was 200ms", name, took)
		}
		if !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
			t.Fatalf("%s: %v, want a deadline error", name, err)
		}
	}
}

// Script calls take no connection from rueidis' pool for blocking
// commands: with that pool exhausted (size 1, held by a BLPOP), locks are
// still taken and released; the subscriber connection a waiter needs
// comes from that pool, and a Locker that cannot have it reports the
// failure within its call bound instead of hanging.
func TestExhaustedBlockingPool(t *testing.T) {
	srv := redistest.Start(t)
	c := plainClient(t, srv, func(o *rueidis.ClientOption) { o.BlockingPoolSize = 1 })
	lk := newLocker(t, c)
	ctx := context.Background()

	var wg sync.WaitGroup
	var blocked atomic.Bool
	wg.Go(func() {
		blocked.Store(true)
		c.Do(ctx, c.B().Blpop().Key("nothing").Timeout(5).Build())
	})
	t.Cleanup(wg.Wait)
	eventually(t, 5*time.Second, "BLPOP in progress", func() bool {
		v, err := srv.Do("CLIENT", "LIST")
		b, _ := v.([]byte)
		return err == nil && blocked.Load() && strings.Contains(string(b), "cmd=blpop")
	})
	le := mustObtain(t, lk, ctx, "k", locker.Params{})
	other := newLocker(t, c)
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	start := time.Now()
	_, err := other.Obtain(cctx, "k", locker.Params{Wait: 10 * time.Second})
	cancel()
	if err == nil {
		t.Fatal("Obtain of a held lock succeeded")
	}
	t.Logf("waiter without a subscriber connection: %v", err)
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("a waiter without a subscriber connection returned after %v", took)
	}
	mustRelease(t, le)
	_, _ = srv.Do("LPUSH", "nothing", "x") // ends the BLPOP
}

// A server that is down: calls fail as unavailable, having sent nothing,
// and work again once it is back. NewFromOption starts without it.
func TestServerDown(t *testing.T) {
	srv := redistest.Start(t)
	addr := srv.Addr()
	lk := newLocker(t, plainClient(t, srv))
	ctx := context.Background()
	mustRelease(t, mustObtain(t, lk, ctx, "k", locker.Params{}))
	srv.Stop()
	_, err := lk.Obtain(ctx, "k", locker.Params{})
	if !errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("Obtain with the server down: %v, want ErrUnavailable", err)
	}
	// The first call may meet the dying connection (EOF: maybe sent);
	// once rueidis redials, nothing is sent.
	eventually(t, 5*time.Second, "a call that was not sent", func() bool {
		_, err := lk.Obtain(ctx, "k", locker.Params{})
		return errors.Is(err, locker.ErrUnavailable) && errors.Is(err, locker.ErrNotSent)
	})
	lazy, err := locker.New(lockrueidis.NewFromOption(rueidis.ClientOption{InitAddress: []string{addr}}))
	if err != nil {
		t.Fatalf("locker.New on NewFromOption with the server down: %v", err)
	}
	t.Cleanup(func() { _ = lazy.Close() })
	if _, err := lazy.Obtain(ctx, "k", locker.Params{}); !errors.Is(err, locker.ErrUnavailable) || !errors.Is(err, locker.ErrNotSent) {
		t.Fatalf("Obtain before the client could be made: %v, want ErrUnavailable and ErrNotSent", err)
	}
	srv.Restart()
	// rueidis spreads calls over several connections; each one that was
	// open before the restart fails its next call (EOF) and is redialled.
	// Every Locker soon takes and releases locks again.
	for i, l := range []*locker.Locker{lk, lazy} {
		attempt := 0
		eventually(t, 10*time.Second, "Obtain and Release after the restart", func() bool {
			attempt++
			le, err := l.Obtain(ctx, fmt.Sprintf("after-%d-%d", i, attempt), locker.Params{TTL: time.Second})
			return err == nil && le.Release(ctx) == nil
		})
	}
}

// A subscriber connection killed by the server breaks the listener once;
// waiters re-subscribe on a new one and still wake by notification.
func TestListenerBroken(t *testing.T) {
	srv := redistest.Start(t)
	c := plainClient(t, srv)
	d := lockrueidis.New(c)
	ctx := context.Background()

	var brokenCalls atomic.Int32
	brokenErr := make(chan error, 1)
	lis, err := d.Listen(ctx, func(string, string) {}, func(err error) {
		brokenCalls.Add(1)
		brokenErr <- err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	if err := lis.Subscribe(ctx, "ch"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-brokenErr:
		if err == nil {
			t.Fatal("broken called with a nil error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("broken not called after the connection was killed")
	}
	if err := lis.Subscribe(ctx, "other"); err == nil {
		t.Fatal("Subscribe on a broken listener succeeded")
	}
	eventually(t, 5*time.Second, "no subscriber left", func() bool { return numSub(t, srv, "ch") == 0 })
	if n := brokenCalls.Load(); n != 1 {
		t.Fatalf("broken called %d times", n)
	}

	// Through the locker: kill the shared connection while a waiter waits.
	holderLk := newLocker(t, plainClient(t, srv))
	waiterLk := newLocker(t, c)
	holder := mustObtain(t, holderLk, ctx, "k", locker.Params{TTL: 30 * time.Second})
	got := make(chan error, 1)
	go func() {
		le, err := waiterLk.Obtain(ctx, "k", locker.Params{Wait: 20 * time.Second})
		if err == nil {
			err = le.Release(ctx)
		}
		got <- err
	}()
	eventually(t, 10*time.Second, "waiter queued", func() bool { return queued(t, c, "k") == 1 })
	eventually(t, 10*time.Second, "waiter subscribed", func() bool { return numSub(t, srv, "locktag:{k}:c") == 1 })
	if _, err := srv.Do("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "waiter subscribed again", func() bool { return numSub(t, srv, "locktag:{k}:c") == 1 })
	released := time.Now()
	mustRelease(t, holder)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(released); took > 5*time.Second {
			t.Fatalf("waiter woke %v after the release", took)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("waiter did not wake")
	}
	// The script calls' connection was not the one killed.
	if _, err := d.Eval(ctx, driver.NewScript("return 1"), driver.Keys{}); err != nil {
		t.Fatalf("Eval after the subscriber connection was killed: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}

// A nil client, or options without an address, are refused where the
// Locker is built.
func TestBadArguments(t *testing.T) {
	for name, d := range map[string]driver.Driver{
		"New(nil)":               lockrueidis.New(nil),
		"NewFromOption(no addr)": lockrueidis.NewFromOption(rueidis.ClientOption{}),
	} {
		if _, err := locker.New(d); !errors.Is(err, locker.ErrBadOption) || !strings.Contains(err.Error(), "rueidis.") {
			t.Errorf("locker.New on %s: %v, want ErrBadOption naming the call", name, err)
		}
	}
}
