package goredis_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/goredis"
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

// Over RESP3 (go-redis's default) and RESP2: replies and pub/sub messages
// are framed differently.
func TestWaitWakesByNotification(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			srv := redistest.Start(t)
			resp := func(o *redis.Options) { o.Protocol = proto }
			holder := newLocker(t, plainClient(t, srv, resp))
			rdb := plainClient(t, srv, resp)
			waiter := newLocker(t, rdb)
			took := waitHandOver(t, holder, waiter, rdb, "order:2")
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
	rdb := plainClient(t, srv)
	lk := newLocker(t, rdb)
	ctx := context.Background()
	mustRelease(t, mustObtain(t, lk, ctx, "k", locker.Params{}))
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	before := commandCalls(t, rdb, "eval")
	mustRelease(t, mustObtain(t, lk, ctx, "k", locker.Params{}))
	if n := commandCalls(t, rdb, "eval") - before; n != 2 {
		t.Fatalf("%d EVAL calls after SCRIPT FLUSH for an obtain and a release, want 2", n)
	}
}

// A nil reply is a nil value; an unknown SHA falls back to EVAL. A
// Script with an empty source, which Redis runs and answers with nil.
func TestEvalNilReply(t *testing.T) {
	srv := redistest.Start(t)
	d := goredis.New(plainClient(t, srv))
	v, err := d.Eval(context.Background(), driver.NewScript(""), driver.Keys{})
	if v != nil || err != nil {
		t.Fatalf("Eval of an empty script = %#v, %v; want nil, nil", v, err)
	}
}

// Eval honours ctx's deadline whether or not the client passes contexts to
// its sockets (ContextTimeoutEnabled).
func TestEvalHonoursDeadline(t *testing.T) {
	for _, ctxTimeouts := range []bool{true, false} {
		t.Run(map[bool]string{true: "ContextTimeoutEnabled", false: "ReadTimeout"}[ctxTimeouts], func(t *testing.T) {
			srv := redistest.Start(t)
			rdb := plainClient(t, srv, func(o *redis.Options) {
				o.ContextTimeoutEnabled = ctxTimeouts
				o.ReadTimeout = 10 * time.Second
			})
			d := goredis.New(rdb)
			ctx := context.Background()
			if _, err := d.Eval(ctx, driver.NewScript(""), driver.Keys{}); err != nil { // connection ready
				t.Fatal(err)
			}
			if _, err := srv.Do("CLIENT", "PAUSE", "3000", "ALL"); err != nil {
				t.Fatal(err)
			}
			cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := d.Eval(cctx, driver.NewScript(""), driver.Keys{})
			if took := time.Since(start); took > 1500*time.Millisecond {
				t.Fatalf("Eval returned after %v, its deadline was 200ms", took)
			}
			if !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
				t.Fatalf("Eval: %v, want a deadline error", err)
			}
		})
	}
}

// An exhausted go-redis pool is reported as locker.ErrPoolExhausted (and so
// as ErrUnavailable by the locker).
func TestPoolExhausted(t *testing.T) {
	srv := redistest.Start(t)
	rdb := plainClient(t, srv, func(o *redis.Options) {
		o.PoolSize = 1
		o.PoolTimeout = 100 * time.Millisecond
		o.MinIdleConns = 0
	})
	lk := newLocker(t, rdb)
	ctx := context.Background()

	// Occupy the pool's only connection with a blocking command.
	var wg sync.WaitGroup
	var blocked atomic.Bool
	wg.Go(func() {
		blocked.Store(true)
		rdb.BLPop(ctx, 5*time.Second, "nothing")
	})
	t.Cleanup(wg.Wait)
	eventually(t, 5*time.Second, "BLPOP in progress", func() bool {
		st := rdb.PoolStats()
		return blocked.Load() && st.TotalConns == 1 && st.IdleConns == 0
	})
	_, err := lk.Obtain(ctx, "k", locker.Params{})
	if !errors.Is(err, locker.ErrPoolExhausted) || !errors.Is(err, locker.ErrUnavailable) || !errors.Is(err, redis.ErrPoolTimeout) {
		t.Fatalf("Obtain on an exhausted pool: %v, want ErrPoolExhausted and ErrUnavailable", err)
	}
	_, _ = srv.Do("LPUSH", "nothing", "x") // ends the BLPOP
}

// A subscriber connection killed by the server breaks the listener once;
// waiters re-subscribe on a new one and still wake by notification.
func TestListenerBroken(t *testing.T) {
	srv := redistest.Start(t)
	rdb := plainClient(t, srv)
	d := goredis.New(rdb)
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
	// go-redis reconnected underneath before the listener closed itself:
	// nothing may stay subscribed on the server.
	eventually(t, 5*time.Second, "no subscriber left", func() bool { return numSub(t, srv, "ch") == 0 })
	if n := brokenCalls.Load(); n != 1 {
		t.Fatalf("broken called %d times", n)
	}

	// Through the locker: kill the shared connection while a waiter waits.
	holderLk := newLocker(t, plainClient(t, srv))
	waiterLk := newLocker(t, rdb)
	holder := mustObtain(t, holderLk, ctx, "k", locker.Params{TTL: 30 * time.Second})
	got := make(chan error, 1)
	go func() {
		le, err := waiterLk.Obtain(ctx, "k", locker.Params{Wait: 20 * time.Second})
		if err == nil {
			err = le.Release(ctx)
		}
		got <- err
	}()
	eventually(t, 10*time.Second, "waiter queued", func() bool { return queued(t, rdb, "k") == 1 })
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
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}
