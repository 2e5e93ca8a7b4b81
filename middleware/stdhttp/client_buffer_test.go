package stdhttp_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/retry"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// cutAnswer answers status with the headers given and a Content-Length
// of len(body), sends only the first half of body and drops the
// connection.
func cutAnswer(status int, body string, hdr ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Length: %d\r\n", status, http.StatusText(status), len(body))
		for i := 0; i+1 < len(hdr); i += 2 {
			fmt.Fprintf(buf, "%s: %s\r\n", hdr[i], hdr[i+1])
		}
		fmt.Fprintf(buf, "\r\n%s", body[:len(body)/2])
		_ = buf.Flush()
	}
}

const inFlightProblem = `{"type":"https://github.com/locktag/locktag/blob/main/docs/idempotency.md#idempotency-key-in-flight","status":409}`

// bufferModes runs f with the transport's default buffering and with
// buffering off.
func bufferModes(t *testing.T, f func(t *testing.T, opts ...stdhttp.RetryOption)) {
	t.Run("buffered", func(t *testing.T) { f(t) })
	t.Run("streamed", func(t *testing.T) { f(t, stdhttp.WithMaxBufferedBody(0)) })
}

// A 409 in flight whose body is cut is retried, after its Retry-After,
// like a whole one: buffered, the cut is no answer; streamed, reading its
// problem type fails, which is no answer too.
func TestRetryTransportCutInFlight(t *testing.T) {
	bufferModes(t, func(t *testing.T, opts ...stdhttp.RetryOption) {
		s, url := serveScript(t, cutAnswer(409, inFlightProblem, "Content-Type", "application/problem+json", "Retry-After", "1"), answer(200))
		var events []retry.Event
		p := quick(retry.WithOnRetry(func(e retry.Event) { events = append(events, e) }))
		resp, err := post(t, stdhttp.NewRetryTransport(nil, p, opts...), url, "b")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		seen := s.seen()
		if err != nil || resp.StatusCode != 200 || string(body) != "OK" || len(seen) != 2 || seen[0].key != seen[1].key {
			t.Fatalf("%d %q %v after %+v", resp.StatusCode, body, err, seen)
		}
		if len(events) != 1 || events[0].Class != retry.NoAnswer || events[0].Hint != time.Second || events[0].Delay != 20*time.Millisecond ||
			!errors.Is(events[0].Err, io.ErrUnexpectedEOF) || !strings.Contains(events[0].Err.Error(), "409") {
			t.Fatalf("retries %+v: want one, no answer, with the 1s hint (capped to 20ms) and the cut 409", events)
		}
	})
}

// A keyed answer cut in its body is retried when buffered; streamed, the
// caller gets it, and its read fails.
func TestRetryTransportCutBody(t *testing.T) {
	const whole = "0123456789abcdefghijklmnopqrstuvwxyz"
	full := func(w http.ResponseWriter) { _, _ = io.WriteString(w, whole) }
	bufferModes(t, func(t *testing.T, opts ...stdhttp.RetryOption) {
		s, url := serveScript(t, cutAnswer(200, whole), full)
		resp, err := post(t, stdhttp.NewRetryTransport(nil, quick(), opts...), url, "b")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if len(opts) == 0 {
			if err != nil || string(body) != whole || len(s.seen()) != 2 {
				t.Fatalf("%q %v after %d attempts; want the whole answer of the retry", body, err, len(s.seen()))
			}
			return
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) || len(s.seen()) != 1 || stdhttp.IdempotencyKeyOf(resp) != s.seen()[0].key {
			t.Fatalf("%q %v after %d attempts, key %q: want the cut answer and the key sent", body, err, len(s.seen()), stdhttp.IdempotencyKeyOf(resp))
		}
	})
}

// A buffered answer is an ordinary response: a ReadCloser that reads it
// all, ContentLength its length, no Transfer-Encoding, and a
// Content-Length header (when there is one) that agrees.
func TestRetryTransportBufferedResponse(t *testing.T) {
	body := strings.Repeat("answer ", 1000)
	cases := map[string]http.HandlerFunc{
		"content-length": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = io.WriteString(w, body)
		},
		"chunked": func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, body[:10])
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, body[10:])
		},
		"gzip, decoded by the transport": func(w http.ResponseWriter, r *http.Request) {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			_, _ = io.WriteString(zw, body)
			_ = zw.Close()
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
			_, _ = w.Write(b.Bytes())
		},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			defer srv.Close()
			resp, err := post(t, stdhttp.NewRetryTransport(nil, quick()), srv.URL, "b")
			if err != nil {
				t.Fatal(err)
			}
			if cl := resp.Header.Get("Content-Length"); resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) != 0 || (cl != "" && cl != strconv.Itoa(len(body))) {
				t.Fatalf("ContentLength %d, Transfer-Encoding %q, Content-Length %q; want %d", resp.ContentLength, resp.TransferEncoding, cl, len(body))
			}
			got, err := io.ReadAll(resp.Body)
			if err != nil || string(got) != body {
				t.Fatalf("read %d bytes, %v", len(got), err)
			}
			if n, err := resp.Body.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Fatalf("read past the end: %d, %v", n, err)
			}
			if err := resp.Body.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("HEAD keeps its announced length", func(t *testing.T) {
		srv := httptest.NewServer(cases["content-length"])
		defer srv.Close()
		req, _ := http.NewRequestWithContext(t.Context(), "HEAD", srv.URL, nil)
		req.Header.Set("Idempotency-Key", `"k"`)
		resp, err := stdhttp.NewRetryTransport(nil, quick()).RoundTrip(req)
		if err != nil || resp.ContentLength != int64(len(body)) {
			t.Fatalf("%v %v", resp, err)
		}
		_ = resp.Body.Close()
	})
}

// cutFirstAnswer serves each request through next and delivers only half
// of the first 200 answer of each operation (the X-Op header) before
// dropping the connection, after next has produced it in full.
func cutFirstAnswer(next http.Handler) http.Handler {
	var mu sync.Mutex
	seen := map[string]bool{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		op := r.Header.Get("X-Op")
		mu.Lock()
		cut := rec.Code == http.StatusOK && !seen[op]
		seen[op] = true
		mu.Unlock()
		if !cut {
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		var hdr []string
		for k := range rec.Header() {
			hdr = append(hdr, k, rec.Header().Get(k))
		}
		cutAnswer(rec.Code, rec.Body.String(), hdr...)(w)
	})
}

// Against the guard on Redis: an answer within the cap that is cut is
// retried and replayed; one over the cap reaches the caller as a stream,
// and the caller retries it with the key from IdempotencyKeyOf.
func TestRetryTransportCapGuard(t *testing.T) {
	lk := newLocker(t)
	var runs atomic.Int32
	big := strings.Repeat("x", 4096)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		_, _ = io.WriteString(w, big)
	})
	srv := httptest.NewServer(cutFirstAnswer(stdhttp.MustIdempotency(lk, guard.WithPublicScope()).Wrap(handler)))
	defer srv.Close()

	t.Run("within the cap", func(t *testing.T) {
		runs.Store(0)
		resp, err := post(t, stdhttp.NewRetryTransport(nil, quick()), srv.URL+"/pay", "a", "X-Op", "within")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || string(body) != big || resp.Header.Get(stdhttp.ReplayedHeader) != "true" || runs.Load() != 1 {
			t.Fatalf("%d bytes, %v, replayed %q, %d runs", len(body), err, resp.Header.Get(stdhttp.ReplayedHeader), runs.Load())
		}
	})

	t.Run("over the cap", func(t *testing.T) {
		runs.Store(0)
		rt := stdhttp.NewRetryTransport(nil, quick(), stdhttp.WithMaxBufferedBody(1024))
		resp, err := post(t, rt, srv.URL+"/pay", "a", "X-Op", "over")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		key := stdhttp.IdempotencyKeyOf(resp)
		if !errors.Is(err, io.ErrUnexpectedEOF) || resp.ContentLength != int64(len(big)) || len(body) != len(big)/2 || key == "" {
			t.Fatalf("%d of %d bytes, %v, key %q: want the stream cut halfway and the key", len(body), resp.ContentLength, err, key)
		}
		resp, err = post(t, rt, srv.URL+"/pay", "a", "X-Op", "over", "Idempotency-Key", key)
		if err != nil {
			t.Fatal(err)
		}
		body, err = io.ReadAll(resp.Body)
		if err != nil || string(body) != big || resp.Header.Get(stdhttp.ReplayedHeader) != "true" || runs.Load() != 1 || stdhttp.IdempotencyKeyOf(resp) != key {
			t.Fatalf("again with the key: %d bytes, %v, replayed %q, %d runs", len(body), err, resp.Header.Get(stdhttp.ReplayedHeader), runs.Load())
		}
	})
}

// Every error of a retried request is a *RetryError with the key that
// was sent, the attempts and the last status, still matching the
// sentinels and the context's error, also through http.Client.
func TestRetryTransportRetryError(t *testing.T) {
	asRetryError := func(t *testing.T, err error) *stdhttp.RetryError {
		t.Helper()
		re := new(stdhttp.RetryError)
		if !errors.As(err, &re) {
			t.Fatalf("%v (%T) is not a *RetryError", err, err)
		}
		return re
	}
	t.Run("given up on 409 in flight", func(t *testing.T) {
		s, url := serveScript(t, problem(409, "idempotency-key-in-flight"))
		client := &http.Client{Transport: stdhttp.NewRetryTransport(nil, quick(retry.WithMaxAttempts(3)))}
		_, err := client.Post(url, "text/plain", strings.NewReader("b"))
		re := asRetryError(t, err)
		key := s.seen()[0].key
		if !errors.Is(err, stdhttp.ErrBudgetExhausted) || re.Key != key || re.Attempts != 3 || re.StatusCode != 409 || !strings.Contains(err.Error(), "Idempotency-Key: "+key) {
			t.Fatalf("%v: %+v; want key %s, 3 attempts, 409", err, re, key)
		}
	})
	t.Run("no answer, the caller's key", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		url := srv.URL
		srv.Close()
		_, err := post(t, stdhttp.NewRetryTransport(nil, quick(retry.WithMaxAttempts(2))), url, "b", "Idempotency-Key", `"mine"`)
		if re := asRetryError(t, err); !errors.Is(err, stdhttp.ErrBudgetExhausted) || re.Key != `"mine"` || re.Attempts != 2 || re.StatusCode != 0 {
			t.Fatalf("%v: %+v", err, re)
		}
	})
	t.Run("context ended while waiting", func(t *testing.T) {
		s, url := serveScript(t, answer(503, "Retry-After", "30"))
		ctx, cancel := context.WithCancel(t.Context())
		p := retry.New(retry.WithMaxRetryAfter(time.Minute), retry.WithBudget(time.Hour), retry.WithOnRetry(func(retry.Event) { cancel() }))
		req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader("b"))
		_, err := stdhttp.NewRetryTransport(nil, p).RoundTrip(req)
		if re := asRetryError(t, err); !errors.Is(err, context.Canceled) || re.Key != s.seen()[0].key || re.Attempts != 1 || re.StatusCode != 503 {
			t.Fatalf("%v: %+v", err, re)
		}
	})
	t.Run("context ended in an attempt", func(t *testing.T) {
		// Before the answer, and in the middle of its body: whether the
		// request ran is unknown, so the error carries the key.
		for name, h := range map[string]func(w http.ResponseWriter, r *http.Request, done <-chan struct{}){
			"before": func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) { <-done },
			"in the body": func(w http.ResponseWriter, r *http.Request, done <-chan struct{}) {
				w.Header().Set("Content-Length", "10")
				_, _ = io.WriteString(w, "12345")
				w.(http.Flusher).Flush()
				<-done
			},
		} {
			t.Run(name, func(t *testing.T) {
				var seen atomic.Value
				done := make(chan struct{})
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					seen.Store(r.Header.Get("Idempotency-Key"))
					h(w, r, done)
				}))
				defer srv.Close()
				defer close(done) // before Close, which waits for the handler
				ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL, strings.NewReader("b"))
				_, err := stdhttp.NewRetryTransport(nil, quick()).RoundTrip(req)
				if re := asRetryError(t, err); !errors.Is(err, context.DeadlineExceeded) || re.Key != seen.Load() || re.Attempts != 1 || re.StatusCode != 0 {
					t.Fatalf("%v: %+v, want the key sent, %v", err, re, seen.Load())
				}
			})
		}
	})
	t.Run("key reused", func(t *testing.T) {
		stub := &stubTransport{statuses: []int{422}, problem: "idempotency-key-reused"}
		req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://example.com/x", strings.NewReader("b"))
		req.Header.Set("Idempotency-Key", `"k"`)
		_, err := stdhttp.NewRetryTransport(stub, quick()).RoundTrip(req)
		if re := asRetryError(t, err); !errors.Is(err, stdhttp.ErrKeyReused) || re.Key != `"k"` || re.Attempts != 1 || re.StatusCode != 422 {
			t.Fatalf("%v: %+v", err, re)
		}
	})
	t.Run("body not rewindable", func(t *testing.T) {
		_, url := serveScript(t, answer(503))
		req, _ := http.NewRequestWithContext(t.Context(), "POST", url, io.NopCloser(strings.NewReader("once")))
		_, err := stdhttp.NewRetryTransport(nil, quick(), stdhttp.WithRetryKeyHeader("X-Key")).RoundTrip(req)
		if re := asRetryError(t, err); !errors.Is(err, stdhttp.ErrBodyNotRewindable) || re.Key == "" || !strings.Contains(err.Error(), "X-Key: "+re.Key) {
			t.Fatalf("%v: %+v", err, re)
		}
	})
	t.Run("without a key", func(t *testing.T) {
		_, url := serveScript(t, answer(503))
		req, _ := http.NewRequestWithContext(t.Context(), "PUT", url, strings.NewReader("b"))
		_, err := stdhttp.NewRetryTransport(nil, quick(retry.WithMaxAttempts(2))).RoundTrip(req)
		if re := asRetryError(t, err); re.Key != "" || re.Attempts != 2 || err.Error() != re.Err.Error() {
			t.Fatalf("%v: %+v", err, re)
		}
	})
}
