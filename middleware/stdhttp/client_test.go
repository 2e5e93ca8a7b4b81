package stdhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/retry"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// arrival is one request a scripted server saw.
type arrival struct {
	at   time.Time
	key  string
	body string
}

// scripted serves answers[i] to the i-th request (the last one after
// that) and records the requests.
type scripted struct {
	mu       sync.Mutex
	arrivals []arrival
	answers  []func(w http.ResponseWriter)
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	i := min(len(s.arrivals), len(s.answers)-1)
	s.arrivals = append(s.arrivals, arrival{time.Now(), r.Header.Get("Idempotency-Key"), string(b)})
	s.mu.Unlock()
	s.answers[i](w)
}

func (s *scripted) seen() []arrival {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]arrival(nil), s.arrivals...)
}

func answer(status int, hdr ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, http.StatusText(status))
	}
}

func problem(status int, typ string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"type":"https://github.com/locktag/locktag/blob/main/docs/idempotency.md#`+typ+`","status":`+strconv.Itoa(status)+`}`)
	}
}

func serveScript(t *testing.T, answers ...func(w http.ResponseWriter)) (*scripted, string) {
	s := &scripted{answers: answers}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// quick is a policy for tests: millisecond backoff, hints capped at 20ms.
func quick(opts ...retry.Option) *retry.Policy {
	return retry.New(append([]retry.Option{retry.WithBackoff(time.Millisecond, 5*time.Millisecond), retry.WithMaxRetryAfter(20 * time.Millisecond)}, opts...)...)
}

func post(t *testing.T, rt http.RoundTripper, url, body string, hdr ...string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := rt.RoundTrip(req)
	if req.Header.Get("Idempotency-Key") != "" && len(hdr) == 0 {
		t.Error("the caller's request was modified")
	}
	if resp != nil {
		t.Cleanup(func() { _ = resp.Body.Close() })
	}
	return resp, err
}

// Which answers are retried, and that every attempt sends the same key
// and the same body.
func TestRetryTransportClasses(t *testing.T) {
	cases := []struct {
		name    string
		answers []func(w http.ResponseWriter)
		opts    []retry.Option
		method  string
		status  int
		tries   int
	}{
		{"503 then 200", []func(http.ResponseWriter){answer(503), answer(200)}, nil, "POST", 200, 2},
		{"429 then 200", []func(http.ResponseWriter){answer(429, "Retry-After", "0"), answer(200)}, nil, "POST", 200, 2},
		{"409 in flight", []func(http.ResponseWriter){problem(409, "idempotency-key-in-flight"), answer(200)}, nil, "POST", 200, 2},
		{"409 lock busy is returned", []func(http.ResponseWriter){problem(409, "lock-busy"), answer(200)}, nil, "POST", 409, 1},
		{"409 lock busy with WithRetryBusy", []func(http.ResponseWriter){problem(409, "lock-busy"), answer(200)}, []retry.Option{retry.WithRetryBusy(true)}, "POST", 200, 2},
		{"the application's 409", []func(http.ResponseWriter){answer(409), answer(200)}, nil, "POST", 409, 1},
		{"the application's 422", []func(http.ResponseWriter){answer(422), answer(200)}, nil, "POST", 422, 1},
		{"500", []func(http.ResponseWriter){answer(500), answer(200)}, nil, "POST", 500, 1},
		{"PUT is retried without a key", []func(http.ResponseWriter){answer(503), answer(200)}, nil, "PUT", 200, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, url := serveScript(t, c.answers...)
			req, _ := http.NewRequestWithContext(t.Context(), c.method, url, strings.NewReader("body"))
			resp, err := stdhttp.NewRetryTransport(nil, quick(c.opts...)).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			seen := s.seen()
			if resp.StatusCode != c.status || len(seen) != c.tries {
				t.Fatalf("%d after %d attempts, want %d after %d", resp.StatusCode, len(seen), c.status, c.tries)
			}
			for _, a := range seen {
				if a.key != seen[0].key || a.body != "body" || (c.method == "POST") != (a.key != "") {
					t.Fatalf("attempts %+v: want one key on each POST, none on a PUT, and the same body", seen)
				}
			}
		})
	}
	t.Run("a POST without a key method is sent once", func(t *testing.T) {
		s, url := serveScript(t, answer(503), answer(200))
		resp, err := post(t, stdhttp.NewRetryTransport(nil, quick(), stdhttp.WithRetryKeyMethods()), url, "b")
		if err != nil || resp.StatusCode != 503 || len(s.seen()) != 1 || s.seen()[0].key != "" {
			t.Fatalf("%v %v, %d attempts", resp, err, len(s.seen()))
		}
	})
	t.Run("the caller's key is kept", func(t *testing.T) {
		s, url := serveScript(t, answer(503), answer(200))
		resp, err := post(t, stdhttp.NewRetryTransport(nil, quick()), url, "b", "Idempotency-Key", `"mine"`)
		if err != nil || resp.StatusCode != 200 || len(s.seen()) != 2 || s.seen()[1].key != `"mine"` {
			t.Fatalf("%v %v, %+v", resp, err, s.seen())
		}
	})
	t.Run("another key header", func(t *testing.T) {
		var keys []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { keys = append(keys, r.Header.Get("X-Request-Key")) }))
		defer srv.Close()
		resp, err := post(t, stdhttp.NewRetryTransport(nil, quick(), stdhttp.WithRetryKeyHeader("x-request-key")), srv.URL, "b")
		if err != nil || resp.StatusCode != 200 || len(keys) != 1 || keys[0] == "" {
			t.Fatalf("%v %v, keys %q", resp, err, keys)
		}
	})
}

// Retry-After is waited for in full, up to WithMaxRetryAfter.
func TestRetryTransportRetryAfter(t *testing.T) {
	t.Run("honoured", func(t *testing.T) {
		s, url := serveScript(t, answer(503, "Retry-After", "1"), answer(200))
		var delay time.Duration
		p := retry.New(retry.WithBackoff(time.Millisecond, time.Millisecond), retry.WithOnRetry(func(e retry.Event) { delay = e.Delay }))
		if resp, err := post(t, stdhttp.NewRetryTransport(nil, p), url, "b"); err != nil || resp.StatusCode != 200 {
			t.Fatal(resp, err)
		}
		seen := s.seen()
		if gap := seen[1].at.Sub(seen[0].at); delay != time.Second || gap < time.Second {
			t.Fatalf("Retry-After: 1 → waited %v (announced %v), want 1s", gap, delay)
		}
	})
	t.Run("capped", func(t *testing.T) {
		date := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
		s, url := serveScript(t, answer(429, "Retry-After", date), answer(503, "Retry-After", "3600"), answer(200))
		var delays []time.Duration
		p := quick(retry.WithOnRetry(func(e retry.Event) { delays = append(delays, e.Delay) }))
		start := time.Now()
		if resp, err := post(t, stdhttp.NewRetryTransport(nil, p), url, "b"); err != nil || resp.StatusCode != 200 {
			t.Fatal(resp, err)
		}
		if len(s.seen()) != 3 || len(delays) != 2 || delays[0] != 20*time.Millisecond || delays[1] != 20*time.Millisecond || time.Since(start) > 10*time.Second {
			t.Fatalf("an hour's Retry-After (date, seconds): delays %v, want the 20ms cap twice", delays)
		}
	})
}

func TestRetryTransportGivesUp(t *testing.T) {
	t.Run("attempts", func(t *testing.T) {
		s, url := serveScript(t, answer(503))
		_, err := post(t, stdhttp.NewRetryTransport(nil, quick(retry.WithMaxAttempts(3))), url, "b")
		if !errors.Is(err, stdhttp.ErrBudgetExhausted) || !strings.Contains(err.Error(), "503") || len(s.seen()) != 3 {
			t.Fatalf("%v after %d attempts", err, len(s.seen()))
		}
	})
	t.Run("time", func(t *testing.T) {
		s, url := serveScript(t, answer(503, "Retry-After", "2"))
		p := retry.New(retry.WithBudget(500*time.Millisecond), retry.WithMaxRetryAfter(time.Minute))
		start := time.Now()
		_, err := post(t, stdhttp.NewRetryTransport(nil, p), url, "b")
		if !errors.Is(err, stdhttp.ErrBudgetExhausted) || len(s.seen()) != 1 || time.Since(start) > 400*time.Millisecond {
			t.Fatalf("%v after %d attempts, %v", err, len(s.seen()), time.Since(start))
		}
	})
	t.Run("transport errors", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close() // nothing listens: every attempt fails to connect
		_, err := post(t, stdhttp.NewRetryTransport(nil, quick(retry.WithMaxAttempts(2))), url, "b")
		if !errors.Is(err, stdhttp.ErrBudgetExhausted) || !strings.Contains(err.Error(), "connect") {
			t.Fatalf("%v", err)
		}
	})
}

// The request's context ends while the client waits for a retry.
func TestRetryTransportContext(t *testing.T) {
	s, url := serveScript(t, answer(503, "Retry-After", "30"))
	ctx, cancel := context.WithCancel(t.Context())
	p := retry.New(retry.WithMaxRetryAfter(time.Minute), retry.WithBudget(time.Hour), retry.WithOnRetry(func(retry.Event) { cancel() }))
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader("b"))
	start := time.Now()
	_, err := stdhttp.NewRetryTransport(nil, p).RoundTrip(req)
	if !errors.Is(err, context.Canceled) || len(s.seen()) != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("%v after %d attempts, %v", err, len(s.seen()), time.Since(start))
	}
}

// A body without GetBody is sent once; a retry is refused.
func TestRetryTransportBodyNotRewindable(t *testing.T) {
	s, url := serveScript(t, answer(503), answer(200))
	req, _ := http.NewRequestWithContext(t.Context(), "POST", url, io.NopCloser(strings.NewReader("once")))
	if req.GetBody != nil {
		t.Fatal("GetBody set for a plain reader")
	}
	_, err := stdhttp.NewRetryTransport(nil, quick()).RoundTrip(req)
	if !errors.Is(err, stdhttp.ErrBodyNotRewindable) || !strings.Contains(err.Error(), "503") || len(s.seen()) != 1 || s.seen()[0].body != "once" {
		t.Fatalf("%v, arrivals %+v", err, s.seen())
	}
}

// Against the guard on Redis: a retry while the key's first request runs
// gets 409 and waits; the operation then gets the first answer. A key
// reused with another body is ErrKeyReused.
func TestRetryTransportGuard(t *testing.T) {
	lk := newLocker(t)
	release := make(chan struct{})
	var entered, runs atomic.Int32
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		if r.Header.Get("X-Slow") != "" {
			entered.Add(1)
			<-release
		}
		_, _ = io.WriteString(w, "run "+strconv.Itoa(int(n)))
	})
	srv := httptest.NewServer(stdhttp.MustIdempotency(lk, guard.WithPublicScope()).Wrap(handler))
	defer srv.Close()
	key := retry.FormatKey(retry.NewKey())

	first := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest("POST", srv.URL+"/pay", strings.NewReader("a"))
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("X-Slow", "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		first <- string(b)
	}()
	testwait.Eventually(t, "the first request runs", func() bool { return entered.Load() == 1 })
	var inFlight atomic.Int32
	p := retry.New(retry.WithBackoff(time.Millisecond, 5*time.Millisecond), retry.WithMaxRetryAfter(20*time.Millisecond),
		retry.WithMaxAttempts(1000), retry.WithOnRetry(func(e retry.Event) {
			if e.Class == retry.InFlight && e.Hint == time.Second && inFlight.Add(1) == 1 {
				close(release)
			}
		}))
	resp, err := post(t, stdhttp.NewRetryTransport(nil, p), srv.URL+"/pay", "a", "Idempotency-Key", key)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if got := <-first; resp.StatusCode != 200 || string(body) != got || got != "run 1" || inFlight.Load() < 1 || runs.Load() != 1 {
		t.Fatalf("%d %q (first %q), %d 409s, %d runs", resp.StatusCode, body, got, inFlight.Load(), runs.Load())
	}

	_, err = post(t, stdhttp.NewRetryTransport(nil, p), srv.URL+"/pay", "b", "Idempotency-Key", key)
	if !errors.Is(err, stdhttp.ErrKeyReused) || !strings.Contains(err.Error(), "422") || runs.Load() != 1 {
		t.Fatalf("another body, same key: %v", err)
	}
}

// trackedBody records whether it was closed.
type trackedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *trackedBody) Close() error { b.closed.Store(true); return nil }

// stubTransport answers with statuses[i] (the last after that), each with
// a tracked body.
type stubTransport struct {
	statuses []int
	problem  string
	bodies   []*trackedBody
}

func (s *stubTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	code := s.statuses[min(len(s.bodies), len(s.statuses)-1)]
	b := &trackedBody{Reader: strings.NewReader(`{"type":"https://example.com/x#` + s.problem + `"}`)}
	s.bodies = append(s.bodies, b)
	h := http.Header{"Content-Type": {"application/problem+json"}}
	return &http.Response{StatusCode: code, Status: strconv.Itoa(code) + " " + http.StatusText(code), Header: h, Body: b, Request: r}, nil
}

// Every response the transport does not return is closed. The one it
// returns reads in full: from memory, the connection's body read to its
// end and closed; with buffering off, the connection's body, left open.
func TestRetryTransportClosesBodies(t *testing.T) {
	const problem409 = `{"type":"https://example.com/x#something-else"}`
	for _, c := range []struct {
		name     string
		opts     []stdhttp.RetryOption
		buffered bool
	}{{"buffered", nil, true}, {"streamed", []stdhttp.RetryOption{stdhttp.WithMaxBufferedBody(0)}, false}} {
		t.Run(c.name, func(t *testing.T) {
			stub := &stubTransport{statuses: []int{503, 429, 409, 200}, problem: "idempotency-key-in-flight"}
			req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://example.com/x", strings.NewReader("b"))
			resp, err := stdhttp.NewRetryTransport(stub, quick(), c.opts...).RoundTrip(req)
			if err != nil || resp.StatusCode != 200 || len(stub.bodies) != 4 {
				t.Fatalf("%v %v after %d attempts", resp, err, len(stub.bodies))
			}
			for i, b := range stub.bodies[:3] {
				if !b.closed.Load() {
					t.Errorf("the body of attempt %d (%d) was not closed", i+1, stub.statuses[i])
				}
			}
			if stub.bodies[3].closed.Load() != c.buffered {
				t.Errorf("the returned answer's connection body closed: %v, want %v", stub.bodies[3].closed.Load(), c.buffered)
			}

			stub = &stubTransport{statuses: []int{422}, problem: "idempotency-key-reused"}
			req, _ = http.NewRequestWithContext(t.Context(), "POST", "http://example.com/x", strings.NewReader("b"))
			if _, err := stdhttp.NewRetryTransport(stub, quick(), c.opts...).RoundTrip(req); !errors.Is(err, stdhttp.ErrKeyReused) || !stub.bodies[0].closed.Load() {
				t.Fatalf("422: %v, closed %v", err, stub.bodies[0].closed.Load())
			}

			stub = &stubTransport{statuses: []int{409}, problem: "something-else"}
			req, _ = http.NewRequestWithContext(t.Context(), "POST", "http://example.com/x", strings.NewReader("b"))
			resp, err = stdhttp.NewRetryTransport(stub, quick(), c.opts...).RoundTrip(req)
			if err != nil || resp.StatusCode != 409 {
				t.Fatal(resp, err)
			}
			if body, _ := io.ReadAll(resp.Body); string(body) != problem409 || stub.bodies[0].closed.Load() != c.buffered {
				t.Fatalf("a 409 returned: body %q, closed %v; want it whole", body, stub.bodies[0].closed.Load())
			}
			if c.buffered && resp.ContentLength != int64(len(problem409)) {
				t.Fatalf("a buffered 409: ContentLength %d, want %d", resp.ContentLength, len(problem409))
			}
		})
	}
}
