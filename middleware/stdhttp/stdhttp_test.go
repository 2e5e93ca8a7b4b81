package stdhttp_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// exampleRedis is a redis-server started for the package by TestMain.
var exampleRedis *redistest.Server

func TestMain(m *testing.M) {
	redistest.Main(m, func(s *redistest.Server) { exampleRedis = s })
}

func newLocker(t *testing.T) *locker.Locker {
	t.Helper()
	lk, err := locker.New(redigo.New(exampleRedis.Pool(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// send serves one request through h and returns the recorder.
func send(h http.Handler, method, target, body string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestServeMuxStatuses(t *testing.T) {
	lk := newLocker(t)
	mux := http.NewServeMux()
	var seen string
	handler := func(w http.ResponseWriter, r *http.Request) {
		lease := locker.FromContext(r.Context())
		seen = lease.Key()
		b, _ := io.ReadAll(r.Body) // the body is restored for the handler
		_, _ = w.Write(b)
	}
	tag := `key:"order:{path.id}:{body.item.sku}:{query.v}:{header.X-User}:{method}:{route}"`
	if err := stdhttp.MustLock(lk, tag).Handle(mux, "POST /orders/{id}/pay", http.HandlerFunc(handler)); err != nil {
		t.Fatal(err)
	}
	// A tag naming a wildcard the pattern lacks: Check refuses it, and at
	// request time it is a 500, never a lock on a shorter key.
	bad := stdhttp.MustLock(lk, `key:"o:{path.oid}"`, guard.WithLogger(slog.New(slog.DiscardHandler)))
	err := bad.Check("GET /o/{id}")
	if !errors.Is(err, stdhttp.ErrBadRule) || !strings.Contains(err.Error(), "has no parameter {oid} (it has {id})") {
		t.Fatalf("Check: %v", err)
	}
	mux.Handle("GET /o/{id}", bad.WrapFunc(handler))

	body := `{"item":{"sku":"A-1"}}`
	w := send(mux, "POST", "/orders/42/pay?v=7", body, "X-User", "ann")
	if w.Code != 200 || w.Body.String() != body || !strings.HasPrefix(seen, "order:42:A-1:7:ann:POST:POST") {
		t.Fatalf("ok: %d %q, key %q", w.Code, w.Body, seen)
	}
	held, err := lk.Obtain(t.Context(), strings.Replace(seen, "42", "43", 1), locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())
	for _, tc := range []struct {
		name, method, target, body string
		want                       int
		problem                    string
	}{
		{"busy", "POST", "/orders/43/pay?v=7", body, 409, "lock-busy"},
		{"missing query", "POST", "/orders/42/pay", body, 400, "bad-lock-key"},
		{"body not JSON", "POST", "/orders/42/pay?v=7", "{", 400, "bad-lock-key"},
		{"tag mistake", "GET", "/o/1", "", 500, "lock-tag-mistake"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := send(mux, tc.method, tc.target, tc.body, "X-User", "ann")
			if w.Code != tc.want || w.Header().Get("Content-Type") != stdhttp.ProblemContentType || !strings.Contains(w.Body.String(), "#"+tc.problem) {
				t.Fatalf("%d %s %q", w.Code, w.Header(), w.Body)
			}
			if (tc.want == 409) != (w.Header().Get("Retry-After") == "1") {
				t.Fatalf("Retry-After %q", w.Header().Get("Retry-After"))
			}
		})
	}
}

func TestBodyCap(t *testing.T) {
	lk := newLocker(t)
	h := stdhttp.MustLock(lk, `key:"b:{body.id}"`, guard.WithMaxRequestBytes(16)).WrapFunc(func(http.ResponseWriter, *http.Request) {})
	if w := send(h, "POST", "/", `{"id":"12345678901234567890"}`); w.Code != 413 {
		t.Fatalf("%d %q", w.Code, w.Body)
	}
}

func TestConstructionErrors(t *testing.T) {
	lk := newLocker(t)
	if _, err := stdhttp.NewLock(nil, `key:"a"`); !errors.Is(err, guard.ErrNilLocker) {
		t.Fatal(err)
	}
	if _, err := stdhttp.NewLock(lk, `key:"a:{nope.x}"`); err == nil {
		t.Fatal("unknown source accepted")
	}
	if _, err := stdhttp.NewLock(lk, `key:"a"`, stdhttp.WithErrorHandler(nil)); !errors.Is(err, locker.ErrBadOption) {
		t.Fatal(err)
	}
	if _, err := stdhttp.NewIdempotency(lk); !errors.Is(err, guard.ErrNoScope) {
		t.Fatal(err)
	}
	if _, err := stdhttp.NewIdempotency(lk, guard.WithPublicScope(), stdhttp.WithPathValue(func(*http.Request, string) string { return "" })); !errors.Is(err, locker.ErrBadOption) {
		t.Fatal(err)
	}
}

func TestIdempotency(t *testing.T) {
	lk := newLocker(t)
	runs := 0
	idem := stdhttp.MustIdempotency(lk, guard.WithScope(func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil }))
	mux := http.NewServeMux()
	mux.Handle("POST /pay", idem.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs++
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-Private", "no")
		w.WriteHeader(201)
		_, _ = w.Write(append([]byte("paid "), b...))
	})))
	k1 := "k1-" + strconv.FormatInt(time.Now().UnixNano(), 36) // fresh for every -count run
	first := send(mux, "POST", "/pay", "5", "Idempotency-Key", k1, "X-User", "ann")
	again := send(mux, "POST", "/pay", "5", "Idempotency-Key", k1, "X-User", "ann")
	if first.Code != 201 || again.Code != 201 || again.Body.String() != "paid 5" || runs != 1 ||
		again.Header().Get(stdhttp.ReplayedHeader) != "true" || again.Header().Get("X-Private") != "" || again.Header().Get("Content-Type") != "text/plain" {
		t.Fatalf("first %d %q, again %d %q %v, runs %d", first.Code, first.Body, again.Code, again.Body, again.Header(), runs)
	}
	if w := send(mux, "POST", "/pay", "6", "Idempotency-Key", k1, "X-User", "ann"); w.Code != 422 {
		t.Fatalf("mismatch: %d", w.Code)
	}
	if w := send(mux, "POST", "/pay", "5", "X-User", "ann"); w.Code != 400 {
		t.Fatalf("missing key: %d", w.Code)
	}
	if w := send(mux, "POST", "/pay", "5", "Idempotency-Key", k1); w.Code != 401 {
		t.Fatalf("no scope: %d", w.Code)
	}
}
