package middleware_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware"
)

// userScope scopes keys by the X-User header (a stand-in for real auth).
var userScope = guard.WithScope(func(c *gin.Context) (string, error) {
	return c.GetHeader("X-User"), nil
})

// payments is a guarded service: POST /pay/:id answers 201 with a receipt
// that names the execution, so a replay is told from a second execution.
type payments struct {
	executions atomic.Int64
	work       func(c *gin.Context) // runs before the answer; may block or panic
}

func (p *payments) handler(c *gin.Context) {
	n := p.executions.Add(1)
	if p.work != nil {
		p.work(c)
	}
	c.Header("Location", "/receipts/"+c.Param("id"))
	c.Header("X-Trace", fmt.Sprint(time.Now().UnixNano())) // not replayed
	c.JSON(http.StatusCreated, gin.H{"receipt": n, "order": c.Param("id")})
}

// engine serves p behind the guard built with lk and opts.
func (p *payments) engine(lk *locker.Locker, opts ...middleware.Option) *gin.Engine {
	r := gin.New()
	r.Use(gin.RecoveryWithWriter(io.Discard))
	r.POST("/pay/:id", middleware.Idempotency(lk, append([]middleware.Option{userScope}, opts...)...), p.handler)
	return r
}

func pay(h http.Handler, key, user, body string) *httptest.ResponseRecorder {
	return pay2(h, "/pay/1", key, user, body)
}

func pay2(h http.Handler, target, key, user, body string) *httptest.ResponseRecorder {
	hdr := []string{"X-User", user}
	if key != "" {
		hdr = append(hdr, "Idempotency-Key", key)
	}
	return do(h, http.MethodPost, target, body, hdr...)
}

func wantStatus(t *testing.T, rec *httptest.ResponseRecorder, status int, kind string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	if kind != "" && !problemType(t, rec.Body.Bytes(), kind) {
		t.Fatalf("body %s, want problem %s", rec.Body, kind)
	}
}

// sameResponse fails unless replay repeats first byte for byte, with the
// marker, the allow-listed headers and without the others.
func sameResponse(t *testing.T, first, replay *httptest.ResponseRecorder) {
	t.Helper()
	if replay.Code != first.Code || replay.Body.String() != first.Body.String() {
		t.Fatalf("replay %d %q, first %d %q", replay.Code, replay.Body, first.Code, first.Body)
	}
	if replay.Header().Get(middleware.ReplayedHeader) != "true" {
		t.Fatalf("replay without %s: %v", middleware.ReplayedHeader, replay.Header())
	}
	for _, h := range []string{"Content-Type", "Location"} {
		if replay.Header().Get(h) != first.Header().Get(h) {
			t.Fatalf("replayed %s %q, first %q", h, replay.Header().Get(h), first.Header().Get(h))
		}
	}
	if replay.Header().Get("X-Trace") != "" {
		t.Fatal("a header outside the allow list was replayed")
	}
}

func TestIdempotencyReplay(t *testing.T) {
	_, lk := setup(t)
	p := &payments{}
	h := p.engine(lk)
	first := pay(h, "k-1", "alice", `{"amount":10}`)
	wantStatus(t, first, http.StatusCreated, "")
	if first.Header().Get(middleware.ReplayedHeader) != "" {
		t.Fatal("first response marked as a replay")
	}
	for _, key := range []string{"k-1", `"k-1"`} { // bare or sf-string: the same key
		sameResponse(t, first, pay(h, key, "alice", `{"amount":10}`))
	}
	if n := p.executions.Load(); n != 1 {
		t.Fatalf("%d executions, want 1", n)
	}
}

func TestIdempotencyMismatch(t *testing.T) {
	_, lk := setup(t)
	p := &payments{}
	h := p.engine(lk)
	wantStatus(t, pay(h, "k", "alice", `{"amount":10}`), http.StatusCreated, "")
	wantStatus(t, pay(h, "k", "alice", `{"amount":99}`), http.StatusUnprocessableEntity, "idempotency-key-reused")
	wantStatus(t, pay2(h, "/pay/2", "k", "alice", `{"amount":10}`), http.StatusUnprocessableEntity, "idempotency-key-reused")
	wantStatus(t, pay2(h, "/pay/1?x=1", "k", "alice", `{"amount":10}`), http.StatusUnprocessableEntity, "idempotency-key-reused")
	if n := p.executions.Load(); n != 1 {
		t.Fatalf("%d executions, want 1", n)
	}
}

func TestIdempotencyScope(t *testing.T) {
	_, lk := setup(t)
	p := &payments{}
	h := p.engine(lk)
	a := pay(h, "shared", "alice", "{}")
	b := pay(h, "shared", "bob", "{}")
	wantStatus(t, b, http.StatusCreated, "")
	if b.Header().Get(middleware.ReplayedHeader) != "" || b.Body.String() == a.Body.String() {
		t.Fatalf("bob got alice's response: %s", b.Body)
	}
	sameResponse(t, a, pay(h, "shared", "alice", "{}"))
	sameResponse(t, b, pay(h, "shared", "bob", "{}"))
	wantStatus(t, pay(h, "shared", "", "{}"), http.StatusUnauthorized, "idempotency-scope-unresolved")
	if n := p.executions.Load(); n != 2 {
		t.Fatalf("%d executions, want 2 (one per scope)", n)
	}
}

func TestIdempotencyBadKeys(t *testing.T) {
	srv, lk := setup(t)
	p := &payments{}
	h := p.engine(lk, guard.WithMaxKeyLen(8))
	before := evalCalls(t, srv)
	wantStatus(t, pay(h, "", "alice", "{}"), http.StatusBadRequest, "idempotency-key-missing")
	for _, key := range []string{"123456789", `"12345678x"`, `"open`, "two words", `"a"b"`, "caf\xc3\xa9"} {
		wantStatus(t, pay(h, key, "alice", "{}"), http.StatusBadRequest, "idempotency-key-invalid")
	}
	req := request(http.MethodPost, "/pay/1", "{}", "X-User", "alice")
	req.Header.Add("Idempotency-Key", "a")
	req.Header.Add("Idempotency-Key", "b")
	wantStatus(t, serve(h, req), http.StatusBadRequest, "idempotency-key-invalid")
	if after := evalCalls(t, srv); after != before {
		t.Fatalf("bad keys reached Redis: %d scripts", after-before)
	}
	if p.executions.Load() != 0 {
		t.Fatal("a handler ran for a bad key")
	}
}

func TestIdempotencyOptionalKey(t *testing.T) {
	_, lk := setup(t)
	p := &payments{}
	h := p.engine(lk, guard.WithOptionalKey())
	wantStatus(t, pay(h, "", "alice", "{}"), http.StatusCreated, "")
	wantStatus(t, pay(h, "", "alice", "{}"), http.StatusCreated, "")
	if n := p.executions.Load(); n != 2 {
		t.Fatalf("%d executions without a key, want 2 (unguarded)", n)
	}
}

func TestNewIdempotencyErrors(t *testing.T) {
	_, lk := setup(t)
	for _, tc := range []struct {
		name string
		lk   *locker.Locker
		opts []middleware.Option
		want error
	}{
		{"no scope", lk, nil, guard.ErrNoScope},
		{"nil locker", nil, []middleware.Option{guard.WithPublicScope()}, guard.ErrNilLocker},
		{"scope and public", lk, []middleware.Option{userScope, guard.WithPublicScope()}, locker.ErrBadOption},
		{"nil scope", lk, []middleware.Option{guard.WithScope[*gin.Context](nil)}, locker.ErrBadOption},
		{"bad key len", lk, []middleware.Option{userScope, guard.WithMaxKeyLen(0)}, locker.ErrBadOption},
		{"bad lease", lk, []middleware.Option{userScope, guard.WithInFlightLease(time.Microsecond)}, locker.ErrBadOption},
		{"empty key header", lk, []middleware.Option{userScope, middleware.WithKeyHeader("")}, locker.ErrBadOption},
		{"empty replay header", lk, []middleware.Option{userScope, middleware.WithReplayHeaders("ETag", "")}, locker.ErrBadOption},
		{"nil error handler", lk, []middleware.Option{userScope, middleware.WithErrorHandler(nil)}, locker.ErrBadOption},
	} {
		if _, err := middleware.NewIdempotency(tc.lk, tc.opts...); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := middleware.NewIdempotency(lk, guard.WithPublicScope()); err != nil {
		t.Errorf("public: %v", err)
	}
}

func TestIdempotencyPanicFreesKey(t *testing.T) {
	_, lk := setup(t)
	var fail atomic.Bool
	fail.Store(true)
	p := &payments{work: func(*gin.Context) {
		if fail.Load() {
			panic("boom")
		}
	}}
	h := p.engine(lk)
	wantStatus(t, pay(h, "k", "alice", "{}"), http.StatusInternalServerError, "")
	fail.Store(false)
	retry := pay(h, "k", "alice", "{}")
	wantStatus(t, retry, http.StatusCreated, "")
	if retry.Header().Get(middleware.ReplayedHeader) != "" {
		t.Fatal("the panic's response was replayed")
	}
	sameResponse(t, retry, pay(h, "k", "alice", "{}"))
	if n := p.executions.Load(); n != 2 {
		t.Fatalf("%d executions, want 2 (the panic and the retry)", n)
	}
}
