package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
)

const (
	lockers    = 5
	duplicates = 50
)

// idempotency: exactly one execution under 50 concurrent duplicates spread
// over 5 Lockers (each its own pool and server instance); the other 49 are
// in flight while the first runs; later duplicates replay it byte for byte
// through every Locker; the key with another body is a mismatch; the key
// in another scope executes on its own.
func idempotency(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	var execs atomic.Int64
	gate := make(chan struct{})
	var nonce atomic.Int64
	nonce.Store(time.Now().UnixNano())
	h := func(ctx context.Context) (int64, error) {
		if execs.Add(1) == 1 {
			select { // the first execution holds its claim until every duplicate is answered
			case <-gate:
			case <-time.After(testwait.Timeout):
				return 0, errors.New("gate never opened")
			}
		}
		return nonce.Add(1), nil // distinct per execution, so a replay is recognisable
	}
	clients := make([]Client, lockers)
	for i := range clients {
		clients[i] = tr.Idempotency(t, newLocker(t, srv), h)
	}
	req := Request{IdemKey: "conf-" + fmt.Sprint(time.Now().UnixNano()), Scope: "alice", Body: "order-1"}

	results := make(chan Result, duplicates)
	var wg sync.WaitGroup
	for i := range duplicates {
		wg.Go(func() { results <- clients[i%lockers](t.Context(), req) })
	}
	var inFlight int
	for range duplicates - 1 {
		r := testwait.Recv(t, results, "a duplicate's answer")
		expect(t, "duplicate while the first runs", r, InFlight)
		inFlight++
	}
	close(gate)
	first := testwait.Recv(t, results, "the first request's answer")
	wg.Wait()
	expect(t, "first", first, OK)
	if n := execs.Load(); n != 1 {
		t.Fatalf("%d executions, want 1", n)
	}
	for i, c := range clients {
		r := c(t.Context(), req)
		expect(t, fmt.Sprint("replay via locker ", i), r, Replay)
		if !bytes.Equal(r.Body, first.Body) {
			t.Fatalf("replay %q, first %q: not byte-identical", r.Body, first.Body)
		}
	}

	other := req
	other.Body = "order-2"
	expect(t, "same key, other body", clients[0](t.Context(), other), Mismatch)

	bob := req
	bob.Scope = "bob"
	r := clients[1](t.Context(), bob)
	expect(t, "same key, other scope", r, OK)
	if execs.Load() != 2 || bytes.Equal(r.Body, first.Body) {
		t.Fatalf("other scope: %d executions (want 2), body %q vs alice's %q", execs.Load(), r.Body, first.Body)
	}
	t.Logf("%d in flight, 1 executed, %d replays", inFlight, lockers)
}

// idempotencyDown: Redis down under an idempotency guard is unavailable
// with a retry hint; the handler never runs.
func idempotencyDown(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	var ran atomic.Int64
	c := tr.Idempotency(t, newLocker(t, srv), func(context.Context) (int64, error) { ran.Add(1); return 1, nil })
	srv.Stop()
	r := c(t.Context(), Request{IdemKey: "conf-down", Scope: "alice", Body: "order-1"})
	expect(t, "redis down", r, Unavailable)
	if !r.Retry || ran.Load() != 0 {
		t.Fatalf("retry hint %v (want true), handler ran %d times (want 0)", r.Retry, ran.Load())
	}
}
