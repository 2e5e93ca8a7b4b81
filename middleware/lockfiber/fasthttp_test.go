package lockfiber_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v3"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockfiber"
)

// A lost lock cancels c.Context() with cause locker.ErrLockLost while the
// handler runs; a handler before the Lock gets its own context back.
func TestLostLockCancelsContext(t *testing.T) {
	srv := redistest.Start(t)
	lk := lockertest.NewLocker(t, srv)
	causes := make(chan error, 1)
	restored := make(chan bool, 1)
	type mark struct{}
	app := newApp()
	app.Get("/x",
		func(c fiber.Ctx) error {
			c.SetContext(context.WithValue(c.Context(), mark{}, true))
			err := c.Next()
			_, ok := c.Context().Value(mark{}).(bool)
			restored <- ok && locker.FromContext(c.Context()) == nil
			return err
		},
		lockfiber.Lock(lk, `key:"lost" expire:"300ms"`),
		func(c fiber.Ctx) error {
			select {
			case <-c.Context().Done():
				causes <- context.Cause(c.Context())
			case <-time.After(10 * time.Second):
				causes <- errors.New("not cancelled")
			}
			return nil // nothing written: the adapter answers 503
		})
	base := serve(t, app)
	status, body := get(t, http.MethodGet, base+"/x")
	if err := <-causes; !errors.Is(err, locker.ErrLockLost) {
		t.Errorf("cause %v, want locker.ErrLockLost", err)
	}
	if !<-restored {
		t.Error("the handler before the Lock did not get its own context back")
	}
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "lock-lost") {
		t.Errorf("%d %s, want 503 lock-lost", status, body)
	}
}

// A handler's error is answered by the app's ErrorHandler inside the
// idempotency guard, so that answer is stored and replayed.
func TestIdempotencyStoresErrorAnswer(t *testing.T) {
	lk := lockertest.NewLocker(t, redistest.Start(t))
	var runs atomic.Int64
	app := newApp()
	app.Post("/p", lockfiber.Idempotency(lk, guard.WithPublicScope()), func(c fiber.Ctx) error {
		runs.Add(1)
		return fiber.NewError(fiber.StatusPaymentRequired, "card declined")
	})
	base := serve(t, app)
	for i := range 2 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/p", strings.NewReader("{}"))
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 64)
		n, _ := resp.Body.Read(b)
		resp.Body.Close()
		if resp.StatusCode != fiber.StatusPaymentRequired || string(b[:n]) != "card declined" || (i == 1) != (resp.Header.Get(lockfiber.ReplayedHeader) == "true") {
			t.Errorf("request %d: %d %q replayed %q", i, resp.StatusCode, b[:n], resp.Header.Get(lockfiber.ReplayedHeader))
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want 1", n)
	}
}

// A body stream is written after the handlers return and cannot be
// stored: the first client gets it, a retry gets 422 (not stored).
func TestIdempotencyStreamNotStored(t *testing.T) {
	lk := lockertest.NewLocker(t, redistest.Start(t))
	app := newApp()
	app.Post("/s", lockfiber.Idempotency(lk, guard.WithPublicScope()), func(c fiber.Ctx) error {
		return c.SendStreamWriter(func(w *bufio.Writer) { _, _ = w.WriteString("streamed") })
	})
	base := serve(t, app)
	want := []int{http.StatusOK, http.StatusUnprocessableEntity}
	for i := range 2 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/s", nil)
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want[i] {
			t.Errorf("request %d: %d, want %d", i, resp.StatusCode, want[i])
		}
	}
}

// A fail-open Lock runs the route when Redis is down, and FailedOpen tells
// the handler why.
func TestFailOpen(t *testing.T) {
	srv := redistest.Start(t)
	lk := lockertest.NewLocker(t, srv)
	app := newApp()
	app.Get("/f", lockfiber.Lock(lk, `key:"f"`, guard.WithFailOpen()), func(c fiber.Ctx) error {
		if lockfiber.FailedOpen(c) == nil {
			return c.SendString("locked")
		}
		return c.SendString("unlocked")
	})
	base := serve(t, app)
	if _, body := get(t, http.MethodGet, base+"/f"); body != "locked" {
		t.Fatalf("Redis up: %q", body)
	}
	srv.Stop()
	testwait.Within(t, 10*time.Second, "a fail-open answer with Redis down", func() bool {
		status, body := get(t, http.MethodGet, base+"/f")
		return status == http.StatusOK && body == "unlocked"
	})
}
