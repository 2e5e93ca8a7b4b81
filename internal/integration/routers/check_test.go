package routers_test

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware/stdhttp"
)

var testRedis *redistest.Server

func TestMain(m *testing.M) {
	redistest.Main(m, func(s *redistest.Server) { testRedis = s })
}

func newLocker(t *testing.T) *locker.Locker {
	t.Helper()
	lk, err := locker.New(redigo.New(testRedis.Pool(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

func send(h http.Handler, method, target string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
	return w
}

// pay answers with the lock's key.
func pay(w http.ResponseWriter, r *http.Request) {
	_, _ = io.WriteString(w, locker.FromContext(r.Context()).Key())
}

// The ways a chi service puts a lock on a route, each with a tag that names
// {path.orderId} on a route that has only {id}.
var chiRoutes = []struct {
	name  string
	build func(r chi.Router, lock *stdhttp.Lock)
}{
	{"With", func(r chi.Router, lock *stdhttp.Lock) { r.With(lock.Wrap).Post("/orders/{id}/pay", pay) }},
	{"handler", func(r chi.Router, lock *stdhttp.Lock) { r.Method("POST", "/orders/{id}/pay", lock.WrapFunc(pay)) }},
	{"sub-router Use", func(r chi.Router, lock *stdhttp.Lock) {
		r.Route("/orders/{id}", func(r chi.Router) {
			r.Use(lock.Wrap)
			r.Post("/pay", pay)
		})
	}},
}

// TestChiCheckRoute: chi.Walk(r, stdhttp.CheckRoute) refuses, at start-up,
// a chi route whose lock tag names a path parameter the route lacks,
// naming the route; the control, the same routes with a tag naming {id},
// passes, and serves the lock on the order's key.
func TestChiCheckRoute(t *testing.T) {
	lk := newLocker(t)
	for _, tc := range chiRoutes {
		t.Run(tc.name, func(t *testing.T) {
			for _, pathValue := range []bool{false, true} {
				var opts []stdhttp.Option
				if pathValue {
					opts = append(opts, stdhttp.WithPathValue(chi.URLParam))
				}
				bad := chi.NewRouter()
				tc.build(bad, stdhttp.MustLock(lk, `key:"order:{path.orderId}"`, opts...))
				err := chi.Walk(bad, stdhttp.CheckRoute)
				if !errors.Is(err, stdhttp.ErrBadRule) || !strings.Contains(err.Error(), "POST /orders/{id}/pay") ||
					!strings.Contains(err.Error(), "no parameter {orderId} (it has {id})") {
					t.Fatalf("WithPathValue %v: chi.Walk with CheckRoute: %v", pathValue, err)
				}
				good := chi.NewRouter()
				tc.build(good, stdhttp.MustLock(lk, `key:"order:{path.id}"`, opts...))
				if err := chi.Walk(good, stdhttp.CheckRoute); err != nil {
					t.Fatalf("WithPathValue %v: control: %v", pathValue, err)
				}
				if w := send(good, "POST", "/orders/42/pay"); w.Code != http.StatusOK || w.Body.String() != "order:42" {
					t.Fatalf("WithPathValue %v: control request: %d %q", pathValue, w.Code, w.Body)
				}
			}
		})
	}
}

// TestChiMissingParamIs500: without the start-up check, a chi route whose
// tag names a missing path parameter answers 500 — a server error, never
// a 400 blaming the client — to every request, and logs it once per route;
// with chi.URLParam as the getter too. The control: a tag naming {id}.
func TestChiMissingParamIs500(t *testing.T) {
	lk := newLocker(t)
	for _, tc := range chiRoutes {
		for _, pathValue := range []bool{false, true} {
			logger, rec := logtest.New()
			opts := []stdhttp.Option{guard.WithLogger(logger)}
			if pathValue {
				opts = append(opts, stdhttp.WithPathValue(chi.URLParam))
			}
			r := chi.NewRouter()
			tc.build(r, stdhttp.MustLock(lk, `key:"order:{path.orderId}"`, opts...))
			for _, target := range []string{"/orders/1/pay", "/orders/2/pay"} {
				if w := send(r, "POST", target); w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), "lock-tag-mistake") {
					t.Fatalf("%s, WithPathValue %v: %s: %d %q, want 500", tc.name, pathValue, target, w.Code, w.Body)
				}
			}
			recs := rec.Records()
			if len(recs) != 1 || recs[0].Level != slog.LevelError || !strings.Contains(recs[0].Attrs["tag"], "{path.orderId}") {
				t.Fatalf("%s, WithPathValue %v: want one record naming the tag for two requests, got:\n%s", tc.name, pathValue, rec)
			}
			control := chi.NewRouter()
			tc.build(control, stdhttp.MustLock(lk, `key:"order:{path.id}"`, opts...))
			if w := send(control, "POST", "/orders/7/pay"); w.Code != http.StatusOK || w.Body.String() != "order:7" {
				t.Fatalf("%s, WithPathValue %v: control: %d %q", tc.name, pathValue, w.Code, w.Body)
			}
		}
	}
}
