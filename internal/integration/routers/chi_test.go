package routers_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// TestChi: chi's URL parameters through WithPathValue; Check reads chi's
// patterns.
func TestChi(t *testing.T) {
	lk := newLocker(t)
	r := chi.NewRouter()
	lock := stdhttp.MustLock(lk, `key:"order:{path.id}"`, stdhttp.WithPathValue(chi.URLParam))
	var seen string
	r.With(lock.Wrap).Post("/orders/{id}/pay", func(w http.ResponseWriter, r *http.Request) {
		seen = locker.FromContext(r.Context()).Key()
	})
	if w := send(r, "POST", "/orders/9/pay"); w.Code != 200 || seen != "order:9" {
		t.Fatalf("%d %q %q", w.Code, w.Body, seen)
	}
	// WithPathValue changes how values are read, not the pattern syntax:
	// Check still reads chi's {id} patterns.
	if err := lock.Check("POST /orders/{id}/pay"); err != nil {
		t.Fatalf("Check with a custom path getter: %v", err)
	}
	if err := lock.Check("POST /anything"); !errors.Is(err, stdhttp.ErrBadRule) {
		t.Fatalf("Check with a custom path getter, a pattern without {id}: %v", err)
	}
}
