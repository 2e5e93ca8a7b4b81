package stdhttp_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/locktag/locktag/middleware/stdhttp"
)

// walkFunc and walk have the shape of chi's WalkFunc and chi.Walk, which
// this module does not import: a named func type, as chi's is.
type walkFunc func(method, route string, h http.Handler, middlewares ...func(http.Handler) http.Handler) error

type route struct {
	method, pattern string
	h               http.Handler
	mws             []func(http.Handler) http.Handler
}

func walk(routes []route, fn walkFunc) error {
	for _, r := range routes {
		if err := fn(r.method, r.pattern, r.h, r.mws...); err != nil {
			return err
		}
	}
	return nil
}

// TestCheckRoutes: CheckRoutes runs CheckRoute on every route a walk
// hands it and reports every misconfigured one — not only the first, as
// chi.Walk with CheckRoute does — naming route and tag; a correct router
// passes, and a walk's own error is reported.
func TestCheckRoutes(t *testing.T) {
	lk := newLocker(t)
	h := http.NotFoundHandler()
	id := stdhttp.MustLock(lk, `key:"o:{path.id}"`)
	name := stdhttp.MustLock(lk, `key:"o:{path.name}"`)
	good := []route{
		{"POST", "/orders/{id}", id.Wrap(h), nil},
		{"GET", "/orders", h, nil},
		{"PUT", "/items/{name}", h, []func(http.Handler) http.Handler{name.Wrap}},
	}
	if err := stdhttp.CheckRoutes(func(check stdhttp.WalkFunc) error { return walk(good, check) }); err != nil {
		t.Fatalf("a correct router: %v", err)
	}

	bad := append(good,
		route{"POST", "/orders/{orderId}/pay", id.Wrap(h), nil},
		route{"DELETE", "/items/{id}", h, []func(http.Handler) http.Handler{name.Wrap}},
	)
	err := stdhttp.CheckRoutes(func(check stdhttp.WalkFunc) error { return walk(bad, check) })
	if !errors.Is(err, stdhttp.ErrBadRule) {
		t.Fatalf("%v, want ErrBadRule", err)
	}
	for _, want := range []string{"POST /orders/{orderId}/pay", "o:{path.id}", "DELETE /items/{id}", "o:{path.name}"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%q does not say %q", err, want)
		}
	}
	if first := walk(bad, stdhttp.CheckRoute); first == nil || strings.Contains(first.Error(), "DELETE") {
		t.Fatalf("a walk with CheckRoute stops at the first: %v", first)
	}

	broken := errors.New("the router failed")
	if err := stdhttp.CheckRoutes(func(stdhttp.WalkFunc) error { return broken }); !errors.Is(err, broken) {
		t.Fatalf("the walk's error: %v", err)
	}
}
