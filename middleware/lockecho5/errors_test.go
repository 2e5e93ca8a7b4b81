package lockecho5_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware/lockecho5"
)

// TestLostLockErrorIsLockLost: a handler that returns its context's error
// after the lock is lost is answered 503 lock-lost with Retry-After by the
// guard, not with the 500 Echo's error handler would make of the error;
// the handler saw the cause locker.ErrLockLost.
func TestLostLockErrorIsLockLost(t *testing.T) {
	srv, _ := setup(t)
	lk, err := locker.New(redigo.New(srv.Pool(t)), locker.WithWatchdog(300*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	started, cause := make(chan struct{}), make(chan error, 1)
	e := newEcho()
	e.POST("/items/:id", func(c *echo.Context) error {
		close(started)
		ctx := c.Request().Context()
		select {
		case <-ctx.Done():
			cause <- context.Cause(ctx)
			return context.Cause(ctx)
		case <-time.After(testwait.Timeout):
			return errors.New("not lost")
		}
	}, lockecho5.Lock(lk, `key:"item:{path.id}"`))
	answered := make(chan *httptest.ResponseRecorder, 1)
	go func() { answered <- do(e, http.MethodPost, "/items/1", "") }()
	testwait.Recv(t, started, "the handler to start")
	if n, err := srv.Do("DEL", "locktag:{item:1}"); err != nil || n != int64(1) {
		t.Fatalf("DEL the lock: %v, %v", n, err)
	}
	if err := testwait.Recv(t, cause, "the handler's context to end"); !errors.Is(err, locker.ErrLockLost) {
		t.Fatalf("cause %v, want locker.ErrLockLost", err)
	}
	rec := testwait.Recv(t, answered, "the answer")
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !problemType(t, rec.Body.Bytes(), "lock-lost") {
		t.Fatalf("%d (Retry-After %q): %s, want 503 lock-lost", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
}

// TestIdempotencyStoresErrorAnswer: an error the handler returns is
// answered by Echo's error handler inside the guard, so that answer is
// stored and replayed to a retry; the handler runs once.
func TestIdempotencyStoresErrorAnswer(t *testing.T) {
	_, lk := setup(t)
	var runs atomic.Int64
	e := newEcho()
	e.POST("/orders", func(c *echo.Context) error {
		runs.Add(1)
		return echo.NewHTTPError(http.StatusUnprocessableEntity, "order rejected")
	}, lockecho5.Idempotency(lk, guard.WithPublicScope()))
	key := fmt.Sprint("idem-err-", time.Now().UnixNano())
	first := do(e, http.MethodPost, "/orders", `{"n":1}`, "Idempotency-Key", key)
	second := do(e, http.MethodPost, "/orders", `{"n":1}`, "Idempotency-Key", key)
	if first.Code != http.StatusUnprocessableEntity || first.Body.String() == "" {
		t.Fatalf("first: %d %q, want Echo's 422", first.Code, first.Body)
	}
	if second.Code != first.Code || second.Body.String() != first.Body.String() || second.Header().Get(lockecho5.ReplayedHeader) != "true" || runs.Load() != 1 {
		t.Fatalf("retry: %d %q replayed=%q after %d runs, want the first answer replayed", second.Code, second.Body, second.Header().Get(lockecho5.ReplayedHeader), runs.Load())
	}
}

// TestDirectWriteSeen: a handler that writes to Echo's Response itself
// (echo.UnwrapResponse) instead of c.Response() has answered as far as the
// lock guard is concerned: a keep tag keeps the lock after its 2xx.
func TestDirectWriteSeen(t *testing.T) {
	_, lk := setup(t)
	e := newEcho()
	e.POST("/items/:id", func(c *echo.Context) error {
		r, err := echo.UnwrapResponse(c.Response())
		if err != nil {
			return err
		}
		r.WriteHeader(http.StatusNoContent)
		return nil
	}, lockecho5.Lock(lk, `key:"item:{path.id}" keep:"1m"`))
	if rec := do(e, http.MethodPost, "/items/1", ""); rec.Code != http.StatusNoContent {
		t.Fatalf("%d %s, want 204", rec.Code, rec.Body)
	}
	if _, err := lk.Obtain(t.Context(), "item:1", locker.Params{}); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("after a 2xx under a keep tag: %v, want the lock kept (ErrNotObtained)", err)
	}
}
