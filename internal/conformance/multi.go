package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// Two routes (or methods) that lock the same two keys, their `keys`
// written in opposite orders: the transfer from one account to the other
// and back.
const (
	multiTagAB = `keys:"conf:mk:%[1]s:a,conf:mk:%[1]s:b" wait:"%[2]s"`
	multiTagBA = `keys:"conf:mk:%[1]s:b,conf:mk:%[1]s:a" wait:"%[2]s"`
)

// multiTag fills in a multi-key tag's wait, leaving the key placeholder
// for the transport (a literal %s, doubled to survive this Sprintf).
func multiTag(tag, wait string) string { return fmt.Sprintf(tag, "%[1]s", wait) }

// multiKey: requests through two guards that name the same keys in
// opposite orders all succeed (no deadlock) and never overlap.
func multiKey(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	var o overlap
	h := o.hold(5 * time.Millisecond)
	clients := []Client{
		tr.Lock(t, lk, multiTag(multiTagAB, "20s"), h),
		tr.Lock(t, newLocker(t, srv), multiTag(multiTagBA, "20s"), h),
	}
	for i, r := range burst(t, clients, 10, "x") {
		expect(t, fmt.Sprint("request ", i), r, OK)
	}
	if m := o.max.Load(); m != 1 || o.ran.Load() != 10 {
		t.Fatalf("max holders %d (want 1), ran %d (want 10)", m, o.ran.Load())
	}
}

// multiKeyControl: the same requests through Lockers that share no key
// (a prefix each) overlap, and the detector sees it.
func multiKeyControl(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	var o overlap
	h := o.hold(2 * time.Second)
	clients := make([]Client, 4)
	for i := range clients {
		tag := multiTagAB
		if i%2 == 1 {
			tag = multiTagBA
		}
		clients[i] = tr.Lock(t, newLocker(t, srv, locker.WithKeyPrefix(fmt.Sprintf("broken%d:", i))), multiTag(tag, "20s"), h)
	}
	burst(t, clients, len(clients), "x")
	if m := o.max.Load(); m < 2 {
		t.Fatalf("control: the detector saw max %d holders under a broken lock", m)
	}
}

// multiKeyBusy: one key held by a single-key lock makes the multi-key
// request busy, and it holds none of its keys afterwards; a request for
// the same account twice takes one lock.
func multiKeyBusy(t *testing.T, tr Transport) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	var ran atomic.Int64
	c := tr.Lock(t, lk, multiTag(multiTagBA, "50ms"), func(context.Context) (int64, error) { ran.Add(1); return 1, nil })
	held, err := lk.Obtain(t.Context(), "conf:mk:x:b", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	r := c(t.Context(), Request{Key: "x"})
	expect(t, "while b is held", r, Busy)
	if !r.Retry || ran.Load() != 0 {
		t.Fatalf("retry hint %v (want true), handler ran %d times (want 0)", r.Retry, ran.Load())
	}
	// All or nothing: a was taken first (global order) and given back.
	a, err := lk.Obtain(t.Context(), "conf:mk:x:a", locker.Params{})
	if err != nil {
		t.Fatalf("a still held after the busy request: %v", err)
	}
	for _, le := range []*locker.Lease{a, held} {
		if err := le.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, "after release", c(t.Context(), Request{Key: "x"}), OK)

	same := tr.Lock(t, lk, `keys:"conf:mk:%[1]s,conf:mk:%[1]s"`, func(ctx context.Context) (int64, error) {
		if n := len(locker.FromContext(ctx).Keys()); n != 1 {
			return 0, errors.New("not one key")
		}
		return 1, nil
	})
	expect(t, "same account", same(t.Context(), Request{Key: "y"}), OK)
}
