package locker_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// TestObtainManyLost: losing one key cancels the lease's context with
// ErrLockLost; Release then reports the lost key.
func TestObtainManyLost(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv, locker.WithWatchdog(3*time.Second, 200*time.Millisecond))
	ctx := context.Background()
	le := mustObtainMany(t, lk, ctx, []string{"a", "b"}, locker.Params{})
	lctx := le.Context()
	if _, err := srv.Do("DEL", "locktag:{b}"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "context cancelled", func() bool { return lctx.Err() != nil })
	if cause := context.Cause(lctx); !errors.Is(cause, locker.ErrLockLost) {
		t.Fatalf("cause %v", cause)
	}
	if !le.Lost() {
		t.Fatal("Lost = false")
	}
	if err := le.Release(ctx); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("Release: %v", err)
	}
	if owner, _ := lockState(t, srv, "a"); owner != "" {
		t.Fatal("a still held after Release")
	}
}

// TestObtainManyBadInput: empty keys, too many keys, a kind.
func TestObtainManyBadInput(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	many := make([]string, locker.MaxKeys+1)
	for i := range many {
		many[i] = strings.Repeat("k", i+1)
	}
	for _, c := range []struct {
		keys []string
		p    locker.Params
		want error
	}{
		{nil, locker.Params{}, locker.ErrEmptyKey},
		{[]string{"a", ""}, locker.Params{}, locker.ErrEmptyKey},
		{many, locker.Params{}, locker.ErrTooManyKeys},
		{[]string{"a", "b"}, locker.Params{Limit: 2}, locker.ErrKindUnsupported},
		{[]string{"a", "b"}, locker.Params{Mode: locker.Read}, locker.ErrKindUnsupported},
	} {
		if _, err := lk.ObtainMany(ctx, c.keys, c.p); !errors.Is(err, c.want) {
			t.Errorf("ObtainMany(%d keys, %+v): %v, want %v", len(c.keys), c.p, err, c.want)
		}
	}
}

// TestObtainManyKeep: ReleaseAfter keeps every key.
func TestObtainManyKeep(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	le := mustObtainMany(t, lk, ctx, []string{"a", "b"}, locker.Params{})
	if err := le.ReleaseAfter(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := lk.Obtain(ctx, k, locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
			t.Fatalf("%s obtained within the keep window: %v", k, err)
		}
	}
}

// TestObtainManyRedlock: on Redlock each key is taken by majority; a
// multi-key lock excludes Obtain of its keys and rolls back when one is
// busy.
func TestObtainManyRedlock(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	lk := newRedlock(t, srvs)
	other := newRedlock(t, srvs)
	ctx := context.Background()
	if err := lk.Supports(locker.Params{}); err != nil {
		t.Fatal(err)
	}
	le := mustObtainMany(t, lk, ctx, []string{"b", "a"}, locker.Params{})
	for _, k := range []string{"a", "b"} {
		if _, err := other.Obtain(ctx, k, locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
			t.Fatalf("Obtain(%s) while multi-held: %v", k, err)
		}
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	held := mustObtain(t, other, ctx, "b", locker.Params{})
	if _, err := lk.ObtainMany(ctx, []string{"b", "a"}, locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("ObtainMany with b busy: %v", err)
	}
	a := mustObtain(t, other, ctx, "a", locker.Params{}) // a was given back
	for _, le := range []*locker.Lease{a, held} {
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// scriptCalls is the number of scripts srv ran since the last RESETSTAT.
func scriptCalls(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	info, err := redis.String(srv.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatal(err)
	}
	return commandCalls(info, "evalsha") + commandCalls(info, "eval")
}

// TestObtainManyOneScript: on one server, free keys are taken in one
// script (one round trip), whatever their number; a busy key with no wait
// costs that one script too, and nothing is held. With a wait, a busy key
// sends the call key by key through the queues.
func TestObtainManyOneScript(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	le := mustObtainMany(t, lk, ctx, []string{"d", "c", "b", "a"}, locker.Params{})
	if n := scriptCalls(t, srv); n != 1 {
		t.Fatalf("ObtainMany of 4 free keys ran %d scripts, want 1", n)
	}
	// The locks it wrote are ordinary mutexes: reentry, fences, release.
	inner := mustObtain(t, lk, le.Context(), "c", locker.Params{})
	if inner.Holds() != 2 || inner.Token() != le.TokenOf("c") {
		t.Fatalf("nested: holds %d token %d, want 2 and %d", inner.Holds(), inner.Token(), le.TokenOf("c"))
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}

	busy := mustObtain(t, newLocker(t, srv), ctx, "c", locker.Params{})
	if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	if _, err := lk.ObtainMany(ctx, []string{"a", "b", "c", "d"}, locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("c busy, no wait: %v", err)
	}
	if n := scriptCalls(t, srv); n != 1 {
		t.Fatalf("a busy ObtainMany without wait ran %d scripts, want 1", n)
	}
	for _, k := range []string{"a", "b", "d"} {
		if owner, _ := lockState(t, srv, k); owner != "" {
			t.Fatalf("%s held after a busy ObtainMany", k)
		}
	}
	if err := busy.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestObtainManyQueuedFirst: a free key with a live waiter queued for it
// is not taken by the one-script path — the waiter comes first — and
// nothing else is taken either.
func TestObtainManyQueuedFirst(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	// A waiter of another process, queued on b with a minute to wait (as
	// acquire.lua writes it: score = arrival in µs, entry "token wait_ms
	// ttl_ms sid"), behind a holder whose lease is over: the lock key
	// lives as long as its queue ("owner fence holds queue granted ends
	// from", see value.lua).
	now := time.Now()
	life := now.Add(time.Minute).UnixMilli()
	ended := strconv.FormatInt(now.Add(-time.Second).UnixMilli(), 10)
	if _, err := srv.Do("SET", "locktag:{b}", "gone-token 1 1 "+strconv.FormatInt(life, 10)+" "+ended+" "+ended+" -", "PXAT", life); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("ZADD", "locktag:{b}:q", now.UnixMicro(), "waiter-token 60000 30000 other"); err != nil {
		t.Fatal(err)
	}
	if _, err := lk.ObtainMany(ctx, []string{"a", "b"}, locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("ObtainMany past a queued waiter: %v", err)
	}
	for k, want := range map[string]string{"a": "", "b": "gone-token"} {
		if owner, _ := lockState(t, srv, k); owner != want {
			t.Fatalf("%s taken past the queue (owner %q)", k, owner)
		}
	}
}
