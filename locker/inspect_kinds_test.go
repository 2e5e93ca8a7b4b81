package locker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

func mustInspect(t *testing.T, lk *locker.Locker, name string) *locker.State {
	t.Helper()
	st, err := lk.Inspect(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Labels: the Locker's and the call's joined, kept through re-entry,
// partial release and keep-after, handed over with the lock to a queued
// waiter; Held follows the server clock; no label stores nothing.
func TestInspectLabels(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv, locker.WithLabel("shop@host-3 pid 412"))
	plain := newLocker(t, srv)
	ctx := context.Background()

	start := time.Now()
	le := mustObtain(t, lk, ctx, "pay:1", locker.Params{Label: "POST /pay/:id trace=abc"})
	inner := mustObtain(t, lk, le.Context(), "pay:1", locker.Params{})
	st := mustInspect(t, lk, "pay:1")
	const want = "shop@host-3 pid 412; POST /pay/:id trace=abc"
	if st.Kind != locker.KindMutex || st.Holder == nil || len(st.Holders) != 1 || st.Holder != &st.Holders[0] {
		t.Fatalf("state %+v", st)
	}
	h := st.Holder
	if h.Label != want || h.Holds != 2 || h.Mode != "" || h.Fence != le.Token() {
		t.Fatalf("holder %+v, want label %q, 2 holds", h, want)
	}
	if h.Held < 0 || h.Held > time.Since(start)+time.Second {
		t.Errorf("held %v, obtained %v ago", h.Held, time.Since(start))
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if h := mustInspect(t, lk, "pay:1").Holder; h == nil || h.Label != want || h.Holds != 1 {
		t.Fatalf("after a partial release: %+v", h)
	}

	// A queued waiter's label becomes the holder's with the hand-over.
	got := make(chan *locker.Lease, 1)
	go func() {
		w, err := plain.Obtain(ctx, "pay:1", locker.Params{Wait: time.Minute, Label: "batch job 7"})
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()
	eventually(t, 5*time.Second, "waiter queued", func() bool { return queueLen(t, srv, "pay:1") == 1 })
	st = mustInspect(t, lk, "pay:1")
	if len(st.Waiters) != 1 || st.Waiters[0].Label != "batch job 7" {
		t.Fatalf("waiters %+v", st.Waiters)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	w := <-got
	if w == nil {
		t.FailNow()
	}
	if h := mustInspect(t, lk, "pay:1").Holder; h == nil || h.Label != "batch job 7" || h.Fence != w.Token() {
		t.Fatalf("after the hand-over: %+v", h)
	}
	if err := w.ReleaseAfter(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if h := mustInspect(t, lk, "pay:1").Holder; h == nil || h.Label != "batch job 7" {
		t.Fatalf("kept after release: %+v", h)
	}

	// No label: the value holds "owner fence holds queue granted ends from".
	le = mustObtain(t, plain, ctx, "plain", locker.Params{})
	v, err := srv.Do("GET", "locktag:{plain}")
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(string(v.([]byte))); len(f) != 7 {
		t.Errorf("lock value %q, want 7 fields", v)
	}
	if h := mustInspect(t, lk, "plain").Holder; h == nil || h.Label != "" {
		t.Errorf("unlabelled holder %+v", h)
	}
	_ = le.Release(ctx)

	// Long labels are cut to MaxLabel bytes of valid UTF-8.
	long := strings.Repeat("é", 150) // 300 bytes
	le = mustObtain(t, plain, ctx, "long", locker.Params{Label: long})
	if h := mustInspect(t, lk, "long").Holder; h == nil || h.Label != strings.Repeat("é", locker.MaxLabel/2) {
		t.Errorf("long label stored as %d bytes", len(h.Label))
	}
	_ = le.Release(ctx)
	le = mustObtain(t, lk, ctx, "long", locker.Params{Label: long})
	if h := mustInspect(t, lk, "long").Holder; h == nil || len(h.Label) > locker.MaxLabel || !strings.HasPrefix(h.Label, "shop@host-3 pid 412; é") {
		t.Errorf("joined long label %q", h.Label)
	}
	_ = le.Release(ctx)

	if _, err := locker.New(nil, locker.WithLabel(strings.Repeat("x", locker.MaxLabel+1))); !errors.Is(err, locker.ErrBadOption) || !strings.Contains(err.Error(), "WithLabel") {
		t.Errorf("WithLabel too long: %v", err)
	}
}

// Semaphores and read/write locks: every holder with its label, mode and
// lease; a semaphore's limit; a read/write waiter's mode; the writer as
// the exclusive holder.
func TestInspectKinds(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv, locker.WithLabel("svc"))
	ctx := context.Background()

	if st := mustInspect(t, lk, "none"); st.Kind != "" || st.Holder != nil || len(st.Holders) != 0 || st.Queued != 0 {
		t.Fatalf("free name: %+v", st)
	}

	a := mustObtain(t, lk, ctx, "sem", locker.Params{Limit: 3, Label: "a", TTL: time.Minute})
	b := mustObtain(t, lk, ctx, "sem", locker.Params{Limit: 3, Label: "b"})
	st := mustInspect(t, lk, "sem")
	if st.Kind != locker.KindSemaphore || st.Limit != 3 || st.Holder != nil || len(st.Holders) != 2 {
		t.Fatalf("semaphore: %+v", st)
	}
	labels := map[string]int64{}
	for _, h := range st.Holders {
		labels[h.Label] = h.Fence
		if h.Mode != "" || h.Holds != 1 || h.LeaseLeft <= 0 || h.Held < 0 {
			t.Errorf("permit %+v", h)
		}
	}
	if labels["svc; a"] != a.Token() || labels["svc; b"] != b.Token() {
		t.Errorf("permits %+v", st.Holders)
	}
	_ = a.Release(ctx)
	_ = b.Release(ctx)

	r1 := mustObtain(t, lk, ctx, "doc", locker.Params{Mode: locker.Read, Label: "r1"})
	r2 := mustObtain(t, lk, ctx, "doc", locker.Params{Mode: locker.Read, Label: "r2"})
	got := make(chan *locker.Lease, 1)
	go func() {
		w, err := lk.Obtain(ctx, "doc", locker.Params{Mode: locker.Write, Wait: time.Minute, Label: "w"})
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()
	eventually(t, 5*time.Second, "writer queued", func() bool { return intReply(t, srv, "ZCARD", "locktag:{doc}:rw:q") == 1 })
	st = mustInspect(t, lk, "doc")
	if st.Kind != locker.KindRW || st.Holder != nil || len(st.Holders) != 2 || st.Limit != 0 {
		t.Fatalf("readers: %+v", st)
	}
	for _, h := range st.Holders {
		if h.Mode != "read" || (h.Label != "svc; r1" && h.Label != "svc; r2") {
			t.Errorf("reader %+v", h)
		}
	}
	if len(st.Waiters) != 1 || st.Waiters[0].Mode != "write" || st.Waiters[0].Label != "svc; w" {
		t.Fatalf("waiters %+v", st.Waiters)
	}
	_ = r1.Release(ctx)
	_ = r2.Release(ctx)
	w := <-got
	if w == nil {
		t.FailNow()
	}
	st = mustInspect(t, lk, "doc")
	if st.Holder == nil || st.Holder.Mode != "write" || st.Holder.Label != "svc; w" || st.Holder.Fence != w.Token() || len(st.Holders) != 1 {
		t.Fatalf("writer: %+v (holder %+v)", st, st.Holder)
	}
	_ = w.Release(ctx)
}

// List names locks of every kind, each once.
func TestListKinds(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	ctx := context.Background()
	for _, o := range []struct {
		name string
		p    locker.Params
	}{
		{"k:m", locker.Params{}},
		{"k:s", locker.Params{Limit: 2}},
		{"k:rw", locker.Params{Mode: locker.Read}},
		{"k:both", locker.Params{}},
		{"k:both", locker.Params{Limit: 2}},
	} {
		le := mustObtain(t, lk, ctx, o.name, o.p)
		t.Cleanup(func() { _ = le.Release(ctx) })
	}
	got, _ := listAll(t, lk, "k:")
	if fmt.Sprint(got) != "[k:both k:m k:rw k:s]" {
		t.Fatalf("List(k:) = %v", got)
	}
}
