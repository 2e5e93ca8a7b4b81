package stdhttp

import (
	"errors"
	"net/http"
	"strings"
)

// WalkFunc is one route as a router's walk hands it over: its method, its
// pattern, its handler and its middlewares. It is chi's chi.WalkFunc;
// CheckRoute is one.
type WalkFunc = func(method, route string, h http.Handler, middlewares ...func(http.Handler) http.Handler) error

// CheckRoutes checks, before traffic, the Locks on every route a router's
// walk hands to check (CheckRoute for each), and joins the errors, one per
// route and each wrapping ErrBadRule, with any error walk returns. For chi:
//
//	err := stdhttp.CheckRoutes(func(check stdhttp.WalkFunc) error { return chi.Walk(r, check) })
//
// http.ServeMux lists no routes: register a locked route with Lock.Handle,
// which checks its pattern. Every adapter's check: docs/routes.md.
func CheckRoutes(walk func(check WalkFunc) error) error {
	var errs []error
	err := walk(func(method, route string, h http.Handler, middlewares ...func(http.Handler) http.Handler) error {
		if err := CheckRoute(method, route, h, middlewares...); err != nil {
			errs = append(errs, err)
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

// CheckRoute checks every Lock on one route against the route's pattern
// (Lock.Check). It is a WalkFunc, so one line checks a whole chi router
// before traffic, stopping at the first error (CheckRoutes reports them
// all):
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
