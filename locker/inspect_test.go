package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
)

// Inspect shows the holder (token, fence, holds, lease left) and the
// waiters in queue order, and writes nothing.
func TestInspect(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()

	st, err := lk.Inspect(ctx, "order:9")
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder != nil || st.Queued != 0 || len(st.Waiters) != 0 {
		t.Fatalf("free lock: %+v", st)
	}
	if n, err := srv.Do("EXISTS", "locktag:{order:9}", "locktag:{order:9}:f", "locktag:{order:9}:q", "locktag:{order:9}:w"); err != nil || n.(int64) != 0 {
		t.Fatalf("Inspect of a free lock left keys: %v %v", n, err)
	}

	le := mustObtain(t, lk, ctx, "order:9", locker.Params{TTL: time.Minute})
	inner := mustObtain(t, lk, le.Context(), "order:9", locker.Params{})
	type result struct {
		le  *locker.Lease
		err error
	}
	waits := []time.Duration{20 * time.Second, 40 * time.Second}
	got := make([]chan result, len(waits))
	for i, w := range waits {
		got[i] = make(chan result, 1)
		go func() {
			le, err := lk.Obtain(ctx, "order:9", locker.Params{Wait: w})
			got[i] <- result{le, err}
		}()
		eventually(t, 5*time.Second, "waiter queued", func() bool {
			st, err := lk.Inspect(ctx, "order:9")
			return err == nil && st.Queued == i+1
		})
	}
	pttlBefore, _ := srv.Do("PTTL", "locktag:{order:9}")

	st, err = lk.Inspect(ctx, "order:9")
	if err != nil {
		t.Fatal(err)
	}
	h := st.Holder
	if h == nil || h.Fence != le.Token() || h.Holds != 2 || h.Owner == "" {
		t.Fatalf("holder %+v, want fence %d, 2 holds", h, le.Token())
	}
	if h.LeaseLeft <= 50*time.Second || h.LeaseLeft > time.Minute {
		t.Errorf("lease left %v of a 1m TTL", h.LeaseLeft)
	}
	if st.Queued != 2 || len(st.Waiters) != 2 {
		t.Fatalf("waiters %+v, queued %d", st.Waiters, st.Queued)
	}
	first, second := st.Waiters[0], st.Waiters[1]
	if first.Owner == second.Owner || first.Owner == h.Owner {
		t.Errorf("owners not distinct: %+v", st)
	}
	if first.Waited < second.Waited || second.Waited < 0 {
		t.Errorf("queue order: waited %v then %v", first.Waited, second.Waited)
	}
	if first.WaitLeft <= 0 || first.WaitLeft > waits[0] || second.WaitLeft <= waits[0] || second.WaitLeft > waits[1] {
		t.Errorf("wait left %v and %v, of %v", first.WaitLeft, second.WaitLeft, waits)
	}
	if pttl, _ := srv.Do("PTTL", "locktag:{order:9}"); pttl.(int64) > pttlBefore.(int64) {
		t.Errorf("Inspect extended the lease: %v -> %v", pttlBefore, pttl)
	}

	// The lock goes to the first waiter: Inspect shows it holding.
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := testwait.Recv(t, got[0], "the first waiter's grant")
	if r.err != nil {
		t.Fatal(r.err)
	}
	st, err = lk.Inspect(ctx, "order:9")
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder == nil || st.Holder.Owner != first.Owner || st.Holder.Fence != r.le.Token() || len(st.Waiters) != 1 || st.Waiters[0].Owner != second.Owner {
		t.Fatalf("after hand-over: %+v (holder %+v)", st, st.Holder)
	}
	if err := r.le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r = testwait.Recv(t, got[1], "the second waiter's grant")
	if r.err != nil {
		t.Fatal(r.err)
	}
	_ = r.le.Release(ctx)

	srv.Stop()
	if _, err := lk.Inspect(ctx, "order:9"); !errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("Redis down: %v", err)
	}
	if _, err := lk.Inspect(ctx, ""); !errors.Is(err, locker.ErrEmptyKey) {
		t.Fatalf("empty name: %v", err)
	}
}
