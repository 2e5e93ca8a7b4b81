package stdhttp

import (
	"net/http"
	"strings"
)

// CheckRoute checks every Lock on one route against the route's pattern
// (Lock.Check): the handler itself when Wrap made it, and each middleware
// that is a Lock's Wrap. Its signature is chi's WalkFunc, so one line
// checks a whole chi router before traffic, without this package
// importing chi:
//
//	if err := chi.Walk(r, stdhttp.CheckRoute); err != nil {
//		log.Fatal(err) // a {path.X} some route lacks, named with the route
//	}
//
// Each middleware is called once with a placeholder handler to see what
// it returns, as the router called it when the route was registered;
// nothing is served. A Lock hidden inside a handler of another kind (one
// that wraps Wrap's) is not found: it is checked at request time (500 and
// one log record per route). The error wraps ErrBadRule and names the
// method and route.
func CheckRoute(method, route string, h http.Handler, middlewares ...func(http.Handler) http.Handler) error {
	pattern := strings.TrimSpace(method + " " + route)
	for _, m := range locksOn(h, middlewares) {
		if err := m.Check(pattern); err != nil {
			return err
		}
	}
	return nil
}

// locksOn returns the Locks among middlewares and wrapped around h.
func locksOn(h http.Handler, middlewares []func(http.Handler) http.Handler) []*Lock {
	var out []*Lock
	probe := http.NotFoundHandler()
	for _, mw := range middlewares {
		if mw == nil {
			continue
		}
		if g, ok := mw(probe).(*guarded); ok {
			out = append(out, g.m)
		}
	}
	for g, ok := h.(*guarded); ok; g, ok = g.next.(*guarded) {
		out = append(out, g.m)
	}
	return out
}
