package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware"
)

// TestLockSerialises: concurrent requests for one key never overlap in the
// handler. The controls show the detector sees overlap when nothing
// excludes anything: the same workload on keys that differ per worker, and
// on a broken lock that runs the handler when the lock is busy (a known
// failure of peer middleware).
func TestLockSerialises(t *testing.T) {
	_, lk := setup(t)
	const workers, each = 8, 5
	tag := `key:"order:{path.id}" wait:"20s"`
	broken := func(c *gin.Context) {
		if le, err := lk.Obtain(c.Request.Context(), "order:"+c.Param("id"), locker.Params{}); err == nil {
			defer le.Release(c.Request.Context())
		}
		c.Next() // the bug: also when not obtained
	}
	for _, tc := range []struct {
		name    string
		lock    gin.HandlerFunc
		target  func(w, i int) string
		wantMax int32
	}{
		{"same key", middleware.Lock(lk, tag), func(w, i int) string { return "/orders/42/pay" }, 1},
		{"control: a key per worker", middleware.Lock(lk, tag), func(w, i int) string { return fmt.Sprintf("/orders/%d/pay", w) }, 2},
		{"control: broken lock", broken, func(w, i int) string { return "/orders/43/pay" }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOverlap()
			r := gin.New()
			r.POST("/orders/:id/pay", o.arrive, tc.lock, o.handler)
			codes := o.run(r, workers, each, tc.target)
			if codes[http.StatusNoContent] != workers*each {
				t.Fatalf("status codes %v, want %d × 204", codes, workers*each)
			}
			got := o.max.Load()
			if tc.wantMax == 1 && got != 1 {
				t.Fatalf("%d handlers held the lock at once", got)
			}
			if tc.wantMax > 1 && got < tc.wantMax {
				t.Fatalf("control: the detector saw at most %d holders; it cannot catch a broken lock", got)
			}
		})
	}
}

// TestLockControlWithoutMiddleware: the same detector on the same route
// without the lock sees overlap.
func TestLockControlWithoutMiddleware(t *testing.T) {
	o := newOverlap()
	r := gin.New()
	r.POST("/orders/:id/pay", o.arrive, o.handler)
	codes := o.run(r, 8, 5, func(int, int) string { return "/orders/42/pay" })
	if codes[http.StatusNoContent] != 40 {
		t.Fatalf("status codes %v", codes)
	}
	if got := o.max.Load(); got < 2 {
		t.Fatalf("the detector saw at most %d holders without a lock", got)
	}
}

// TestLockDifferentKeysRunInParallel: two requests on different keys are
// inside their handlers at the same time.
func TestLockDifferentKeysRunInParallel(t *testing.T) {
	_, lk := setup(t)
	entered := make(chan string, 2)
	bothIn := make(chan struct{})
	r := gin.New()
	r.POST("/orders/:id/pay", middleware.Lock(lk, `key:"order:{path.id}"`), func(c *gin.Context) {
		entered <- c.Param("id")
		select {
		case <-bothIn:
			c.Status(http.StatusNoContent)
		case <-time.After(10 * time.Second):
			c.Status(http.StatusTeapot) // the other request never got in
		}
	})
	codes := make(chan int, 2)
	for _, id := range []string{"1", "2"} {
		go func() { codes <- do(r, http.MethodPost, "/orders/"+id+"/pay", "").Code }()
	}
	recv(t, entered, "the first handler")
	recv(t, entered, "the second handler, while the first holds its lock")
	close(bothIn)
	for range 2 {
		if code := recv(t, codes, "a response"); code != http.StatusNoContent {
			t.Fatalf("status %d", code)
		}
	}
}

// TestLockWait: a request that waits gets the lock when the holder
// releases; one that may not wait gets 409 with Retry-After; one whose own
// deadline passes while waiting gets 503.
func TestLockWait(t *testing.T) {
	srv, lk := setup(t)
	holding := make(chan struct{})
	finish := make(chan struct{})
	var mu sync.Mutex
	var order []string
	r := gin.New()
	h := func(c *gin.Context) {
		who := c.Query("who")
		mu.Lock()
		order = append(order, who+" in")
		mu.Unlock()
		if who == "holder" {
			close(holding)
			<-finish
		}
		mu.Lock()
		order = append(order, who+" out")
		mu.Unlock()
		c.Status(http.StatusNoContent)
	}
	r.POST("/wait/:id", middleware.Lock(lk, `key:"w:{path.id}" wait:"20s"`), h)
	r.POST("/nowait/:id", middleware.Lock(lk, `key:"w:{path.id}" wait:"0"`), h)
	r.POST("/wait3s/:id", middleware.Lock(lk, `key:"w:{path.id}" wait:"2500ms"`), h)

	before := channels(t, srv)
	holder := make(chan int, 1)
	go func() { holder <- do(r, http.MethodPost, "/wait/1?who=holder", "").Code }()
	recv(t, holding, "the holder")

	rec := do(r, http.MethodPost, "/nowait/1?who=nowait", "")
	if rec.Code != http.StatusConflict || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("wait:0 on a held lock: status %d, Retry-After %q; want 409, 1", rec.Code, rec.Header().Get("Retry-After"))
	}
	if ct := rec.Header().Get("Content-Type"); ct != middleware.ProblemContentType {
		t.Fatalf("Content-Type %q", ct)
	}

	// The caller's own deadline ends the wait: 503, not 409.
	req := request(http.MethodPost, "/wait3s/1?who=deadline", "")
	rec = serve(r, req.WithContext(ctxWithTimeout(t, 100*time.Millisecond)))
	if rec.Code != http.StatusServiceUnavailable || !problemType(t, rec.Body.Bytes(), "lock-wait-ended") {
		t.Fatalf("deadline while waiting: %d %s", rec.Code, rec.Body)
	}

	waiter := make(chan int, 1)
	go func() { waiter <- do(r, http.MethodPost, "/wait/1?who=waiter", "").Code }()
	waitForWaiter(t, srv, before)
	close(finish)
	if code := recv(t, holder, "the holder's response"); code != http.StatusNoContent {
		t.Fatalf("holder: %d", code)
	}
	if code := recv(t, waiter, "the waiter's response"); code != http.StatusNoContent {
		t.Fatalf("waiter: %d", code)
	}
	want := []string{"holder in", "holder out", "waiter in", "waiter out"}
	if !slices.Equal(order, want) {
		t.Fatalf("order %q, want %q", order, want)
	}
}

// TestLockRetryAfter: Retry-After is at least 1s (the rounding of longer
// waits is TestRetryAfter's).
func TestLockRetryAfter(t *testing.T) {
	_, lk := setup(t)
	hold, err := lk.Obtain(context.Background(), "ra:1", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release(context.Background())
	for _, tc := range []struct{ wait, want string }{{"0", "1"}, {"10ms", "1"}} {
		r := gin.New()
		r.GET("/ra/:id", middleware.Lock(lk, `key:"ra:{path.id}" wait:"`+tc.wait+`"`), leaseKey)
		rec := do(r, http.MethodGet, "/ra/1", "")
		if rec.Code != http.StatusConflict || rec.Header().Get("Retry-After") != tc.want {
			t.Errorf("wait %s: %d, Retry-After %q, want 409, %s", tc.wait, rec.Code, rec.Header().Get("Retry-After"), tc.want)
		}
	}
}

// TestLockRedisDown: fail-closed answers 503 without running the handler;
// WithFailOpen runs it, unlocked, and says so.
func TestLockRedisDown(t *testing.T) {
	srv, lk := setup(t)
	ran := map[string]bool{}
	var failedOpen error
	r := gin.New()
	r.GET("/closed/:id", middleware.Lock(lk, `key:"d:{path.id}"`), func(c *gin.Context) {
		ran["closed"] = true
	})
	r.GET("/open/:id", middleware.Lock(lk, `key:"d:{path.id}"`, guard.WithFailOpen()), func(c *gin.Context) {
		ran["open"] = true
		failedOpen = middleware.FailedOpen(c)
		if failedOpen != nil && locker.FromContext(c.Request.Context()) != nil {
			t.Error("a failed-open handler sees a lease")
		}
		c.Status(http.StatusNoContent)
	})
	if rec := do(r, http.MethodGet, "/open/1", ""); rec.Code != http.StatusNoContent || failedOpen != nil {
		t.Fatalf("with Redis up: %d, FailedOpen %v", rec.Code, failedOpen)
	}
	ran = map[string]bool{}
	srv.Stop()

	rec := do(r, http.MethodGet, "/closed/1", "")
	if rec.Code != http.StatusServiceUnavailable || ran["closed"] || !problemType(t, rec.Body.Bytes(), "lock-unavailable") {
		t.Fatalf("fail-closed: %d %s, handler ran: %v", rec.Code, rec.Body, ran["closed"])
	}
	if body := rec.Body.String(); containsAny(body, srv.Addr(), "127.0.0.1", "d:1", "refused") {
		t.Fatalf("the problem body leaks details: %s", body)
	}
	rec = do(r, http.MethodGet, "/open/1", "")
	if rec.Code != http.StatusNoContent || !ran["open"] || !errors.Is(failedOpen, locker.ErrUnavailable) {
		t.Fatalf("fail-open: %d, handler ran %v, FailedOpen %v", rec.Code, ran["open"], failedOpen)
	}
}

// TestLockPanicReleases: a panicking handler's lock is released at once and
// the panic reaches gin.Recovery.
func TestLockPanicReleases(t *testing.T) {
	_, lk := setup(t)
	var recovered any
	r := gin.New()
	r.Use(gin.CustomRecoveryWithWriter(io.Discard, func(c *gin.Context, v any) {
		recovered = v
		c.AbortWithStatus(http.StatusInternalServerError)
	}))
	r.GET("/p/:id", middleware.Lock(lk, `key:"p:{path.id}" wait:"0"`), func(c *gin.Context) {
		if c.Query("panic") != "" {
			panic("boom")
		}
		leaseKey(c)
	})
	if rec := do(r, http.MethodGet, "/p/1?panic=1", ""); rec.Code != http.StatusInternalServerError || recovered != "boom" {
		t.Fatalf("panic: %d, recovered %v", rec.Code, recovered)
	}
	// wait:"0": a lock still held would be a 409 now.
	if rec := do(r, http.MethodGet, "/p/1", ""); rec.Code != http.StatusOK || rec.Body.String() != "p:1" {
		t.Fatalf("after the panic: %d %s", rec.Code, rec.Body)
	}
}

// TestLockLost: a lease that runs out cancels the handler's context with
// cause locker.ErrLockLost; 503 if the handler wrote nothing, and the status
// it wrote (with the loss on c.Errors) if it did.
func TestLockLost(t *testing.T) {
	_, lk := setup(t)
	var cause error
	var errs []*gin.Error
	r := gin.New()
	r.Use(func(c *gin.Context) {
		c.Next()
		errs = c.Errors
	})
	r.GET("/l/:id", middleware.Lock(lk, `key:"l:{path.id}" expire:"200ms"`), func(c *gin.Context) {
		if c.Query("write") != "" {
			c.Status(http.StatusAccepted)
			c.Writer.WriteHeaderNow()
		}
		ctx := c.Request.Context()
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
		case <-time.After(10 * time.Second):
		}
	})
	rec := do(r, http.MethodGet, "/l/1", "")
	if !errors.Is(cause, locker.ErrLockLost) {
		t.Fatalf("context cause %v, want locker.ErrLockLost", cause)
	}
	if rec.Code != http.StatusServiceUnavailable || !problemType(t, rec.Body.Bytes(), "lock-lost") {
		t.Fatalf("lost, nothing written: %d %s", rec.Code, rec.Body)
	}
	cause = nil
	rec = do(r, http.MethodGet, "/l/2?write=1", "")
	if !errors.Is(cause, locker.ErrLockLost) || rec.Code != http.StatusAccepted {
		t.Fatalf("lost after writing: cause %v, status %d", cause, rec.Code)
	}
	if len(errs) == 0 || !errors.Is(errs[len(errs)-1].Err, locker.ErrLockLost) {
		t.Fatalf("c.Errors %v, want locker.ErrLockLost", errs)
	}
}

// TestLockLeaseInHandler: the handler's context carries the lease with a
// fencing token that grows per holder, and a nested Obtain re-enters it.
func TestLockLeaseInHandler(t *testing.T) {
	_, lk := setup(t)
	var tokens []int64
	r := gin.New()
	r.GET("/f/:id", middleware.Lock(lk, `key:"f:{path.id}"`), func(c *gin.Context) {
		ctx := c.Request.Context()
		le := locker.FromContext(ctx)
		tokens = append(tokens, le.Token())
		inner, err := lk.Obtain(ctx, "f:"+c.Param("id"), locker.Params{})
		if err != nil || inner.Holds() != 2 {
			t.Errorf("nested Obtain: %v", err)
			return
		}
		_ = inner.Release(ctx)
		c.Status(http.StatusNoContent)
	})
	for range 2 {
		if rec := do(r, http.MethodGet, "/f/1", ""); rec.Code != http.StatusNoContent {
			t.Fatalf("status %d", rec.Code)
		}
	}
	if len(tokens) != 2 || tokens[1] <= tokens[0] {
		t.Fatalf("fencing tokens %v do not grow", tokens)
	}
}

// TestLockContextRestored: middleware outside the lock sees the original,
// uncancelled request context after the chain.
func TestLockContextRestored(t *testing.T) {
	_, lk := setup(t)
	var outer, after *http.Request
	r := gin.New()
	r.Use(func(c *gin.Context) {
		outer = c.Request
		c.Next()
		after = c.Request
	})
	r.GET("/c/:id", middleware.Lock(lk, `key:"c:{path.id}"`), leaseKey)
	if rec := do(r, http.MethodGet, "/c/1", ""); rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	if after != outer || after.Context().Err() != nil {
		t.Fatalf("request after the chain: %p (before %p), ctx err %v", after, outer, after.Context().Err())
	}
}

// TestLockManyRequests runs sequential and parallel requests on one engine
// (so gin reuses its contexts) to let the race detector look at the
// request-time paths, and checks each handler saw its own key and body.
func TestLockManyRequests(t *testing.T) {
	_, lk := setup(t)
	r := gin.New()
	r.Use(middleware.LockRules(lk, middleware.Rules{"POST /r/:id": `key:"r:{path.id}:{body.n}" wait:"20s"`}))
	r.POST("/r/:id", func(c *gin.Context) {
		var b struct{ N json.Number }
		if err := c.ShouldBindJSON(&b); err != nil {
			c.Status(http.StatusBadRequest)
			return
		}
		leaseKey(c)
	})
	check := func(id, n int) error {
		rec := do(r, http.MethodPost, fmt.Sprintf("/r/%d", id), fmt.Sprintf(`{"n":%d}`, n))
		if want := fmt.Sprintf("r:%d:%d", id, n); rec.Code != http.StatusOK || rec.Body.String() != want {
			return fmt.Errorf("request %d/%d: %d %q, want %q", id, n, rec.Code, rec.Body, want)
		}
		return nil
	}
	for i := range 50 {
		if err := check(i%3, i); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for w := range 8 {
		wg.Go(func() {
			for i := range 25 {
				if err := check(w%3, i%4); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
