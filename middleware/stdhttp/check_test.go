package stdhttp_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/locktag/locktag/middleware/stdhttp"
)

// TestCheckPatterns: Check reads the parameters of ServeMux, chi and
// gorilla/mux patterns.
func TestCheckPatterns(t *testing.T) {
	lk := newLocker(t)
	id := stdhttp.MustLock(lk, `key:"o:{path.id}"`)
	rest := stdhttp.MustLock(lk, `key:"f:{path.*}"`)
	for _, tc := range []struct {
		lock    *stdhttp.Lock
		pattern string
		ok      bool
	}{
		{id, "GET /o/{id}", true},
		{id, "GET example.com/o/{id}/x", true},
		{id, "/o/{id...}", true},
		{id, "/o/{id:[0-9]+}", true},     // chi, gorilla
		{id, "/o/{id:[0-9]{3}}/x", true}, // braces nest in a regexp
		{id, "/o/{ id }", true},          // gorilla trims spaces
		{id, "/o/{idx}", false},
		{id, "/o/{x:id}", false}, // id is the regexp, not the name
		{id, "/o/{$}", false},
		{id, "/o/id", false},
		{rest, "/files/*", true}, // chi's catch-all
		{rest, "/files/{x}", false},
	} {
		err := tc.lock.Check(tc.pattern)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, stdhttp.ErrBadRule)) {
			t.Errorf("Check(%q): %v, want ok %v", tc.pattern, err, tc.ok)
		}
	}
}

// TestCheckRoute: CheckRoute finds a Lock as the route's handler (also
// wrapped twice) and among its middlewares, and ignores the rest.
func TestCheckRoute(t *testing.T) {
	lk := newLocker(t)
	good := stdhttp.MustLock(lk, `key:"o:{path.id}"`)
	bad := stdhttp.MustLock(lk, `key:"o:{path.orderId}"`)
	h := http.NotFoundHandler()
	other := func(next http.Handler) http.Handler { return next }
	for _, tc := range []struct {
		name string
		h    http.Handler
		mws  []func(http.Handler) http.Handler
		ok   bool
	}{
		{"no lock", h, []func(http.Handler) http.Handler{other, nil}, true},
		{"good handler", good.Wrap(h), nil, true},
		{"bad handler", bad.Wrap(h), nil, false},
		{"bad inside good", good.Wrap(bad.Wrap(h)), nil, false},
		{"good middleware", h, []func(http.Handler) http.Handler{other, good.Wrap}, true},
		{"bad middleware", h, []func(http.Handler) http.Handler{other, bad.Wrap}, false},
	} {
		err := stdhttp.CheckRoute("POST", "/orders/{id}", tc.h, tc.mws...)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, stdhttp.ErrBadRule)) {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
