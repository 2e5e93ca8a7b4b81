package middleware_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

func init() { gin.SetMode(gin.TestMode) }

// setup starts a redis-server and a Locker on it.
func setup(t testing.TB) (*redistest.Server, *locker.Locker) {
	t.Helper()
	srv := redistest.Start(t)
	lk, err := locker.New(redigo.New(srv.Pool(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return srv, lk
}

// request builds an in-process request; hdr is "Name", "value" pairs.
func request(method, target, body string, hdr ...string) *http.Request {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req
}

// serve runs one request through h and returns the recorded response.
func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// do is serve(h, request(...)).
func do(h http.Handler, method, target, body string, hdr ...string) *httptest.ResponseRecorder {
	return serve(h, request(method, target, body, hdr...))
}

// leaseKey is a handler that answers 200 with the name of the lock it holds
// ("" without one).
func leaseKey(c *gin.Context) {
	name := ""
	if le := locker.FromContext(c.Request.Context()); le != nil {
		name = le.Key()
	}
	c.String(http.StatusOK, name)
}

// evalCalls counts the scripts Redis has run, to show a request never
// reached it.
func evalCalls(t testing.TB, srv *redistest.Server) int {
	t.Helper()
	s, err := redis.String(srv.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	n := 0
	for line := range strings.Lines(s) {
		if strings.HasPrefix(line, "cmdstat_eval:") || strings.HasPrefix(line, "cmdstat_evalsha:") {
			_, rest, _ := strings.Cut(line, "calls=")
			rest, _, _ = strings.Cut(rest, ",")
			for _, ch := range rest {
				n = n*10 + int(ch-'0')
			}
		}
	}
	return n
}

// channels lists the pub/sub channels someone is subscribed to.
func channels(t testing.TB, srv *redistest.Server) []string {
	t.Helper()
	cs, err := redis.Strings(srv.Do("PUBSUB", "CHANNELS"))
	if err != nil {
		t.Fatalf("PUBSUB CHANNELS: %v", err)
	}
	slices.Sort(cs)
	return cs
}

// waitForWaiter polls until a lock channel (":c") beyond those in before
// is subscribed: a waiting Obtain listens on its lock's channel, so then
// some request is queued for a lock. (A Locker's first lease subscribes
// its force-release control channel, which says nothing about waiters.)
func waitForWaiter(t testing.TB, srv *redistest.Server, before []string) {
	t.Helper()
	eventually(t, 5*time.Second, "a request waiting for the lock", func() bool {
		for _, ch := range channels(t, srv) {
			if strings.HasSuffix(ch, ":c") && !slices.Contains(before, ch) {
				return true
			}
		}
		return false
	})
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Within(t, within, what, cond)
}

// recv is testwait.Recv.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return testwait.Recv(t, ch, what)
}

// overlap is an overlap detector: handlers call enter and leave around the
// critical section, and max is the most holders ever seen at once.
//
// So that a broken lock is caught reliably rather than by luck, a holder
// stays inside (hold) until one of these: it sees another holder (the
// detector fired); it sees another request that arrived (arrive runs before
// the lock) and has been kept out for overlapGrace of this hold (the lock
// works); or it
// has been alone in flight for overlapGrace (nobody to overlap with). With
// a working lock, every contended hold ends the second way; without one,
// the first request that arrives during a hold enters and is counted.
type overlap struct {
	holders, max       atomic.Int32
	arrived, completed atomic.Int32

	mu      sync.Mutex
	pending map[*gin.Context]time.Time // arrived, not yet entered
}

const overlapGrace = 5 * time.Millisecond

func newOverlap() *overlap {
	return &overlap{pending: make(map[*gin.Context]time.Time)}
}

// arrive is the middleware that runs before the lock.
func (o *overlap) arrive(c *gin.Context) {
	o.mu.Lock()
	o.pending[c] = time.Now()
	o.mu.Unlock()
	o.arrived.Add(1)
	defer o.completed.Add(1)
	c.Next()
	o.mu.Lock()
	delete(o.pending, c) // refused requests never enter
	o.mu.Unlock()
}

// handler is the protected handler.
func (o *overlap) handler(c *gin.Context) {
	o.mu.Lock()
	delete(o.pending, c)
	o.mu.Unlock()
	n := o.holders.Add(1)
	for m := o.max.Load(); n > m && !o.max.CompareAndSwap(m, n); m = o.max.Load() {
	}
	o.hold()
	o.holders.Add(-1)
	c.Status(http.StatusNoContent)
}

func (o *overlap) hold() {
	start := time.Now()
	deadline := start.Add(5 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if o.holders.Load() > 1 || o.max.Load() > 1 {
			return
		}
		o.mu.Lock()
		kept := false
		for _, at := range o.pending {
			kept = kept || time.Since(later(at, start)) >= overlapGrace
		}
		o.mu.Unlock()
		alone := o.arrived.Load()-o.completed.Load() == 1
		if kept || (alone && time.Since(start) >= overlapGrace) {
			return
		}
		<-tick.C
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// run sends workers×each requests from workers goroutines and returns the
// status codes seen.
func (o *overlap) run(h http.Handler, workers, each int, target func(w, i int) string) map[int]int {
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				rec := do(h, http.MethodPost, target(w, i), "")
				mu.Lock()
				codes[rec.Code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return codes
}

// ctxWithTimeout is a request context with a deadline.
func ctxWithTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// problemType reports whether body is a problem+json object whose type ends
// with "#"+kind.
func problemType(t testing.TB, body []byte, kind string) bool {
	t.Helper()
	var p struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Errorf("not a problem+json body: %s", body)
		return false
	}
	return strings.HasSuffix(p.Type, "#"+kind) && p.Title != "" && p.Status != 0
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
