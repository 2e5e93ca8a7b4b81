package ops_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/ops"
	"github.com/locktag/locktag/locker/redigo"
)

// A force-release frees the lock, ends the holder's context with the
// reason, hands the lock to the next waiter, is audited, and touches no
// other lock; a second one finds nothing held: 409, nothing changed.
func TestForceRelease(t *testing.T) {
	lk, _ := newLocker(t)
	var logs logtest.Buffer
	ts := serve(t, lk, ops.WithAuthorizer(allowAll), ops.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))),
		ops.WithIdentity(func(r *http.Request) string { return r.Header.Get("X-User") }))
	url := ts.URL + "/debug/locktag/api/release"
	held := obtain(t, lk, "order:1")
	heldCtx := held.Context() // as a handler would have it
	other := obtain(t, lk, "order:2")
	got := make(chan *locker.Lease, 1)
	go func() {
		le, err := lk.Obtain(t.Context(), "order:1", locker.Params{Wait: time.Minute})
		if err != nil {
			t.Error(err)
		}
		got <- le
	}()
	eventually(t, "a waiter on order:1", func() bool {
		st, err := lk.Inspect(t.Context(), "order:1")
		return err == nil && st.Queued == 1
	})

	a := post(t, url, `{"name":"order:1","reason":"stuck in test"}`, "X-User", "alice")
	if a.status != http.StatusOK || a.body != `{"released":true,"name":"order:1"}`+"\n" {
		t.Fatalf("release: %d %q", a.status, a.body)
	}
	testwait.Recv(t, heldCtx.Done(), "the holder's context to end")
	if cause := context.Cause(heldCtx); !errors.Is(cause, locker.ErrLockLost) || !strings.Contains(cause.Error(), "stuck in test") {
		t.Fatalf("holder's cause: %v", cause)
	}
	next := testwait.Recv(t, got, "the waiter to get the lock")
	defer next.Release(context.Background())
	if next.Token() <= held.Token() {
		t.Fatalf("next fence %d not above %d", next.Token(), held.Token())
	}
	if other.Context().Err() != nil {
		t.Fatal("another lock was touched")
	}
	if err := next.Release(t.Context()); err != nil {
		t.Fatal(err)
	}

	a = post(t, url, `{"name":"order:1","reason":"again"}`, "X-User", "alice")
	if a.status != http.StatusConflict || !strings.Contains(a.errorText(t), "not held") {
		t.Fatalf("second release: %d %q", a.status, a.body)
	}
	st, err := lk.Inspect(t.Context(), "order:2")
	if err != nil || st.Holder == nil || st.Holder.Fence != other.Token() || other.Context().Err() != nil {
		t.Fatalf("order:2 after: %+v %v", st, err)
	}
	rec := logs.String()
	for _, want := range []string{
		`"msg":"locktag: force-release","who":"alice","lock":"order:1","reason":"stuck in test","result":"released"`,
		`"level":"INFO","msg":"locktag: force-release","who":"alice","lock":"order:1","reason":"again","result":"not held"`,
	} {
		if !strings.Contains(rec, want) {
			t.Errorf("audit log lacks %s:\n%s", want, rec)
		}
	}
}

// A redacted row is released by its handle; the answer and the audit
// record show the redaction, never the name.
func TestForceReleaseRedacted(t *testing.T) {
	lk, _ := newLocker(t)
	var logs logtest.Buffer
	ts := serve(t, lk, ops.WithAuthorizer(allowAll), ops.WithRedaction(ops.HashNames([]byte("a test redaction secret"))),
		ops.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	held := obtain(t, lk, "user:bob@example.com")
	heldCtx := held.Context()
	var p ops.Page
	do(t, http.MethodGet, ts.URL+"/debug/locktag/api/locks", "").decode(t, &p)
	if len(p.Locks) != 1 || !p.Locks[0].CanRelease {
		t.Fatalf("list: %+v", p)
	}
	a := post(t, ts.URL+"/debug/locktag/api/release", `{"handle":"`+p.Locks[0].Handle+`","reason":"r"}`)
	if a.status != http.StatusOK || strings.Contains(a.body, "bob") || !strings.Contains(a.body, p.Locks[0].Name) {
		t.Fatalf("release by handle: %d %q", a.status, a.body)
	}
	testwait.Recv(t, heldCtx.Done(), "the holder's context to end")
	if rec := logs.String(); strings.Contains(rec, "bob") || !strings.Contains(rec, p.Locks[0].Name) {
		t.Fatalf("audit record: %s", rec)
	}
}

// A force-release racing the holder's own release: one of them frees the
// lock; the operator gets 200 or 409 "not held", and nothing else
// changes (another lock stays held by the same holder).
func TestForceReleaseRacesRelease(t *testing.T) {
	lk, _ := newLocker(t)
	asked := make(chan struct{}, 1)
	authz := func(_ *http.Request, a ops.Action, _ string) error {
		if a == ops.Release {
			select {
			case asked <- struct{}{}:
			default:
			}
		}
		return nil
	}
	ts := serve(t, lk, ops.WithAuthorizer(authz), ops.WithLogger(slog.New(slog.DiscardHandler)))
	other := obtain(t, lk, "keep:1")
	seen := map[int]int{}
	for i := range 20 {
		select {
		case <-asked:
		default:
		}
		le, err := lk.Obtain(t.Context(), "race:1", locker.Params{TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var status int
		var relErr error
		wg.Go(func() {
			if i%2 == 1 {
				// Let the force-release get as far as its Redis call
				// first, so both orders happen.
				testwait.Recv(t, asked, "the force-release to be authorized")
			}
			relErr = le.Release(context.Background())
		})
		wg.Go(func() {
			status = post(t, ts.URL+"/debug/locktag/api/release", `{"name":"race:1","reason":"race"}`).status
		})
		wg.Wait()
		seen[status]++
		switch {
		case status == http.StatusOK && !errors.Is(relErr, locker.ErrNotHeld) && relErr != nil:
			t.Fatalf("release after a force-release: %v", relErr)
		case status == http.StatusConflict && relErr != nil:
			t.Fatalf("409 but the holder's release failed: %v", relErr)
		case status != http.StatusOK && status != http.StatusConflict:
			t.Fatalf("force-release answered %d", status)
		}
		st, err := lk.Inspect(t.Context(), "race:1")
		if err != nil || st.Holder != nil {
			t.Fatalf("race:1 still held: %+v %v", st, err)
		}
	}
	st, err := lk.Inspect(t.Context(), "keep:1")
	if err != nil || st.Holder == nil || st.Holder.Fence != other.Token() || other.Context().Err() != nil {
		t.Fatalf("keep:1 changed: %+v %v", st, err)
	}
	t.Logf("answers: %v", seen)
}

// On a Redlock Locker the page lists the lock once per page (each master
// lists it), shows the majority's holder, and force-releases it.
func TestRedlock(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	var drivers []driver.Driver
	for _, s := range srvs {
		drivers = append(drivers, redigo.New(s.Pool(t)))
	}
	lk, err := locker.NewRedlock(drivers, locker.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	ts := serve(t, lk, ops.WithAuthorizer(allowAll), ops.WithLogger(slog.New(slog.DiscardHandler)))
	held := obtain(t, lk, "order:7")
	heldCtx := held.Context() // as a handler would have it

	var p ops.Page
	a := do(t, http.MethodGet, ts.URL+"/debug/locktag/api/locks?prefix=order:", "")
	a.decode(t, &p)
	if a.status != http.StatusOK || len(p.Locks) != 1 || len(p.Locks[0].Holders) != 1 || p.Locks[0].Holders[0].Fence != held.Token() {
		t.Fatalf("redlock list: %d %s", a.status, a.body)
	}
	if a := post(t, ts.URL+"/debug/locktag/api/release", `{"name":"order:7","reason":"redlock test"}`); a.status != http.StatusOK {
		t.Fatalf("redlock release: %d %s", a.status, a.body)
	}
	testwait.Recv(t, heldCtx.Done(), "the holder's context to end")
	if a := do(t, http.MethodGet, ts.URL+"/debug/locktag/api/lock?name=order:7", ""); a.status != http.StatusNotFound {
		t.Fatalf("after release: %d %s", a.status, a.body)
	}
}
