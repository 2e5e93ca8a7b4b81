package stdhttp

import (
	"net/http"
	"strings"
)

// CheckRoute checks every Lock on one route against the route's pattern
// (Lock.Check). Its signature is chi's WalkFunc, so one line checks a whole
// chi router before traffic:
//
//	if err := chi.Walk(r, stdhttp.CheckRoute); err != nil { log.Fatal(err) }
//
// Each middleware is called once with a placeholder handler; nothing is
// served. A Lock hidden inside a handler of another kind is checked at
// request time instead. The error wraps ErrBadRule and names the route.
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
