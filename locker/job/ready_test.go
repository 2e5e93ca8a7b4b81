package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/job"
)

// ask serves one request on h and returns the status and the decoded body.
func ask(t testing.TB, h http.Handler) (int, readyAnswer) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ready", nil))
	var b readyAnswer
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	if ct, cc := rec.Header().Get("Content-Type"), rec.Header().Get("Cache-Control"); ct != "application/json" || cc != "no-store" {
		t.Fatalf("Content-Type %q, Cache-Control %q", ct, cc)
	}
	return rec.Code, b
}

func readyHandler(t testing.TB, el *job.Elector, opts ...job.ReadyOption) http.Handler {
	t.Helper()
	h, err := job.ReadyHandler(el, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestReadyHandlerStates: a candidate that has not campaigned, the leader,
// a follower naming the leader by its Locker's label, and both after the
// leader resigned.
func TestReadyHandlerStates(t *testing.T) {
	srv := redistest.Start(t)
	const name = "leader:states"
	a, _ := job.NewElector(replica(t, srv, locker.WithLabel("pod-a")), name)
	b, _ := job.NewElector(replica(t, srv, locker.WithLabel("pod-b")), name, job.WithRetryDelay(20*time.Millisecond))
	ha, hb := readyHandler(t, a), readyHandler(t, b)
	ctx := context.Background()

	if code, body := ask(t, ha); code != 503 || body != (readyAnswer{Status: "follower", Reason: "not campaigning"}) {
		t.Fatalf("before campaigning: %d %+v", code, body)
	}
	ta, err := a.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := ask(t, ha); code != 200 || body != (readyAnswer{Status: "leader", Token: ta.Token()}) {
		t.Fatalf("leader: %d %+v, want 200 with token %d", code, body, ta.Token())
	}
	if code, body := ask(t, hb); code != 503 || body != (readyAnswer{Status: "follower", Leader: "pod-a", Token: ta.Token(), Reason: "not campaigning"}) {
		t.Fatalf("b, not campaigning: %d %+v", code, body)
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.Run(runCtx, nil) }()
	eventually(t, testwait.Timeout, "b queued", func() bool { return queued(t, srv, name) == 1 })
	if code, body := ask(t, hb); code != 503 || body != (readyAnswer{Status: "follower", Leader: "pod-a", Token: ta.Token()}) {
		t.Fatalf("b, campaigning: %d %+v", code, body)
	}

	if err := ta.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	// A resigned term is no loss: a says follower, and names b once b leads.
	eventually(t, testwait.Timeout, "b leads", b.IsLeader)
	tb, _ := b.Term()
	if code, body := ask(t, hb); code != 200 || body != (readyAnswer{Status: "leader", Token: tb.Token()}) {
		t.Fatalf("b leading: %d %+v", code, body)
	}
	if code, body := ask(t, ha); code != 503 || body != (readyAnswer{Status: "follower", Leader: "pod-b", Token: tb.Token(), Reason: "not campaigning"}) {
		t.Fatalf("a after resigning: %d %+v", code, body)
	}
	cancel()
	if err := testwait.Recv(t, done, "b's Run ends"); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if code, body := ask(t, hb); code != 503 || body != (readyAnswer{Status: "follower", Reason: "not campaigning"}) {
		t.Fatalf("b after Run, nobody leading: %d %+v", code, body)
	}
	// A leader without a Locker label is not named; its term is.
	c, _ := job.NewElector(replica(t, srv), name)
	tc, err := c.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Resign(ctx)
	if code, body := ask(t, ha); code != 503 || body != (readyAnswer{Status: "follower", Token: tc.Token(), Reason: "not campaigning"}) {
		t.Fatalf("a, c leading: %d %+v", code, body)
	}
}

// TestReadyHandlerLost: a leader cut off from Redis answers 503 "lost" the
// moment its Elector says it no longer leads, never later: from the first
// request after IsLeader turned false (no wait), with the term context's
// cause and "redis unreachable". Once reconnected, it names the new
// leader. Without the look-up, it stays "lost" and names nobody.
func TestReadyHandlerLost(t *testing.T) {
	srv := redistest.Start(t)
	const name, lease = "leader:ready-lost", 300 * time.Millisecond
	wd := locker.WithWatchdog(lease, lease/3)
	lkA, f := cutOff(t, srv, wd)
	a, _ := job.NewElector(lkA, name, job.WithRetryDelay(20*time.Millisecond))
	b, _ := job.NewElector(replica(t, srv, wd, locker.WithLabel("pod-b")), name, job.WithRetryDelay(20*time.Millisecond))
	ha, plain := readyHandler(t, a), readyHandler(t, a, job.WithReadyLookup(0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = a.Run(ctx, nil) }()
	eventually(t, testwait.Timeout, "a leads", a.IsLeader)
	ta, _ := a.Term()
	go func() { _ = b.Run(ctx, nil) }()
	eventually(t, testwait.Timeout, "b queued", func() bool { return queued(t, srv, name) == 1 })

	f.Down.Store(true)
	for a.IsLeader() {
		// A 503 while a still leads after it (a cannot lead again while
		// cut off) would be a 503 in the middle of the term.
		if code, body := ask(t, ha); code != 200 && a.IsLeader() {
			t.Fatalf("503 %+v while a leads", body)
		}
		time.Sleep(time.Millisecond) // polling IsLeader, not synchronising
	}
	// IsLeader said no: from here on, 503 at once.
	code, body := ask(t, ha)
	if code != 503 || body.Status != "lost" || body.Token != ta.Token() ||
		!strings.Contains(body.Reason, locker.ErrLockLost.Error()) || !strings.Contains(body.Reason, "redis unreachable") {
		t.Fatalf("after the loss: %d %+v", code, body)
	}
	if code, body := ask(t, plain); code != 503 || body != (readyAnswer{Status: "lost", Token: ta.Token(), Reason: locker.ErrLockLost.Error()}) {
		t.Fatalf("after the loss, no look-up: %d %+v", code, body)
	}

	eventually(t, testwait.Timeout, "b leads", b.IsLeader)
	tb, _ := b.Term()
	f.Down.Store(false)
	eventually(t, testwait.Timeout, "a names b", func() bool {
		code, body := ask(t, ha)
		return code == 503 && body == readyAnswer{Status: "follower", Leader: "pod-b", Token: tb.Token()}
	})
	if code, body := ask(t, plain); code != 503 || body.Status != "lost" {
		t.Fatalf("no look-up, after b leads: %d %+v", code, body)
	}
}

// TestElectorChanged: Changed's channel closes when the process is
// elected, and when its term ends, lost or resigned.
func TestElectorChanged(t *testing.T) {
	srv := redistest.Start(t)
	const lease = 300 * time.Millisecond
	lk, f := cutOff(t, srv, locker.WithWatchdog(lease, lease/3))
	el, _ := job.NewElector(lk, "leader:changed", job.WithRetryDelay(20*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	changed := el.Changed()
	if el.Changed() != changed {
		t.Fatal("Changed handed out a new channel without a change")
	}
	term, err := el.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	closed(t, changed, "elected")

	changed = el.Changed()
	f.Down.Store(true)
	closed(t, changed, "lost")
	if el.IsLeader() || term.Context().Err() == nil {
		t.Fatal("Changed closed, yet the term is live")
	}
	_ = term.Resign(ctx)
	f.Down.Store(false)

	term, err = el.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	changed = el.Changed()
	if err := term.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	closed(t, changed, "resigned")
}

// closed fails unless ch is closed within testwait.Timeout.
func closed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testwait.Timeout):
		t.Fatalf("Changed's channel not closed: %s", what)
	}
}

// TestReadyOptions: bad values are construction errors wrapping
// locker.ErrBadOption that name the option.
func TestReadyOptions(t *testing.T) {
	el, _ := job.NewElector(replica(t, exampleRedis), "leader:options")
	tests := []struct {
		name string
		el   *job.Elector
		opt  job.ReadyOption
		want string // "" for valid
	}{
		{"default", el, job.WithReadyLookup(time.Second), ""},
		{"no look-up", el, job.WithReadyLookup(0), ""},
		{"negative look-up", el, job.WithReadyLookup(-time.Millisecond), "WithReadyLookup(-1ms)"},
		{"nil option", el, nil, "nil ReadyOption"},
		{"nil elector", nil, job.WithReadyLookup(0), "nil Elector"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := job.ReadyHandler(tt.el, tt.opt)
			if tt.want == "" {
				if err != nil || h == nil {
					t.Fatalf("ReadyHandler: %v", err)
				}
				return
			}
			if h != nil || !errors.Is(err, locker.ErrBadOption) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadyHandler = %v, %v; want ErrBadOption naming %s", h, err, tt.want)
			}
		})
	}
}
