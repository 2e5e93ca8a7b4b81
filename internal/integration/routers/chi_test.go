package routers_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware/stdhttp"
)

func newLocker(t *testing.T) *locker.Locker {
	t.Helper()
	srv := redistest.Start(t)
	lk, err := locker.New(redigo.New(srv.Pool(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

func send(h http.Handler, method, target, body string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, strings.NewReader(body)))
	return w
}

// TestChi: chi's URL parameters through WithPathValue.
func TestChi(t *testing.T) {
	lk := newLocker(t)
	r := chi.NewRouter()
	lock := stdhttp.MustLock(lk, `key:"order:{path.id}"`, stdhttp.WithPathValue(chi.URLParam))
	var seen string
	r.With(lock.Wrap).Post("/orders/{id}/pay", func(w http.ResponseWriter, r *http.Request) {
		seen = locker.FromContext(r.Context()).Key()
	})
	if w := send(r, "POST", "/orders/9/pay", ""); w.Code != 200 || seen != "order:9" {
		t.Fatalf("%d %q %q", w.Code, w.Body, seen)
	}
	if err := lock.Check("POST /anything"); err != nil {
		t.Fatalf("Check with a custom path getter: %v", err)
	}
}
