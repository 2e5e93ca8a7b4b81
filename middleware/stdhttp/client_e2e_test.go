package stdhttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/retry"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// executions counts a guarded handler's executions per idempotency key
// and per operation (the X-Op header, the same on every attempt of one
// operation), and keeps each operation's first answer.
type executions struct {
	mu    sync.Mutex
	n     int
	byKey map[string]int
	byOp  map[string]int
	first map[string]string
}

func newExecutions() *executions {
	return &executions{byKey: map[string]int{}, byOp: map[string]int{}, first: map[string]string{}}
}

func (e *executions) handler(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	e.n++
	op := r.Header.Get("X-Op")
	e.byKey[r.Header.Get("Idempotency-Key")]++
	e.byOp[op]++
	answer := fmt.Sprintf("execution %d of %s (%s)", e.n, op, body)
	if _, ok := e.first[op]; !ok {
		e.first[op] = answer
	}
	e.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, answer)
}

// exactlyOnce is nil when every operation and every key ran exactly once.
func (e *executions) exactlyOnce(ops []string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, op := range ops {
		if n := e.byOp[op]; n != 1 {
			return fmt.Errorf("operation %s executed %d times", op, n)
		}
	}
	for k, n := range e.byKey {
		if n != 1 {
			return fmt.Errorf("key %s executed %d times", k, n)
		}
	}
	return nil
}

// dropFirstAnswer serves each request through next and, for the first
// answer (200) of each operation, drops it after next has produced it:
// the connection is closed and the client gets no response.
func dropFirstAnswer(t *testing.T, next http.Handler) http.Handler {
	var mu sync.Mutex
	seen := map[string]bool{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		op := r.Header.Get("X-Op")
		mu.Lock()
		drop := rec.Code == http.StatusOK && !seen[op]
		if drop {
			seen[op] = true
		}
		mu.Unlock()
		if drop {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			_ = conn.Close()
			return
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// freshKeyPerAttempt is the broken client the control uses: its key is
// minted below the retry layer, anew for every attempt.
type freshKeyPerAttempt struct{ base http.RoundTripper }

func (f freshKeyPerAttempt) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Idempotency-Key", retry.FormatKey(retry.NewKey()))
	return f.base.RoundTrip(r)
}

// runOps posts ops operations, four at a time, through client and returns
// their answers.
func runOps(t *testing.T, client *http.Client, url string, ops []string) map[string]*http.Response {
	t.Helper()
	var mu sync.Mutex
	out := map[string]*http.Response{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, op := range ops {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			req, _ := http.NewRequestWithContext(t.Context(), "POST", url, strings.NewReader(`{"op":"`+op+`"}`))
			req.Header.Set("X-Op", op)
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("%s: %v", op, err)
				return
			}
			mu.Lock()
			out[op] = resp
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// Through a server that drops every operation's first answer after the
// guarded handler ran, the retrying client runs each operation exactly
// once and gets the first execution's answer, replayed. The control — a
// client whose key changes with every attempt — runs each twice, which
// the same check must catch.
func TestRetryTransportExactlyOnce(t *testing.T) {
	lk := newLocker(t)
	policy := retry.New(retry.WithBackoff(time.Millisecond, 10*time.Millisecond))
	serve := func(t *testing.T) (*executions, string) {
		ex := newExecutions()
		idem := stdhttp.MustIdempotency(lk, guard.WithPublicScope())
		srv := httptest.NewServer(dropFirstAnswer(t, idem.Wrap(http.HandlerFunc(ex.handler))))
		t.Cleanup(srv.Close)
		return ex, srv.URL + "/payments"
	}
	// No keep-alives: net/http's Transport would resend a keyed request
	// itself after a reused connection fails, below the control's keys.
	base := func() http.RoundTripper { return &http.Transport{DisableKeepAlives: true} }
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	ops := make([]string, 16)
	for i := range ops {
		ops[i] = run + "-" + strconv.Itoa(i)
	}

	t.Run("same key on every attempt", func(t *testing.T) {
		ex, url := serve(t)
		client := &http.Client{Transport: stdhttp.NewRetryTransport(base(), policy)}
		answers := runOps(t, client, url, ops)
		if err := ex.exactlyOnce(ops); err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			resp := answers[op]
			if resp == nil {
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			ex.mu.Lock()
			first := ex.first[op]
			ex.mu.Unlock()
			if resp.StatusCode != 200 || string(body) != first || resp.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("%s: %d %q replayed=%q, want the first execution's %q replayed", op, resp.StatusCode, body, resp.Header.Get("Idempotent-Replayed"), first)
			}
		}
	})

	t.Run("control: a new key per attempt", func(t *testing.T) {
		ex, url := serve(t)
		client := &http.Client{Transport: stdhttp.NewRetryTransport(freshKeyPerAttempt{base()}, policy)}
		for _, resp := range runOps(t, client, url, ops) {
			_ = resp.Body.Close()
		}
		if err := ex.exactlyOnce(ops); err == nil {
			t.Fatal("the control ran every operation once: the test cannot catch a client that changes its key")
		}
		ex.mu.Lock()
		defer ex.mu.Unlock()
		for _, op := range ops {
			if ex.byOp[op] != 2 {
				t.Errorf("control: %s executed %d times, want 2", op, ex.byOp[op])
			}
		}
	})
}
