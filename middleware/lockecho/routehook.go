package lockecho

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/labstack/echo/v4"
)

// route names one route of one host's router.
type route struct{ host, method, path string }

// recordRoutes installs a RouteCheck's hook on e.
func recordRoutes(e *echo.Echo) *RouteCheck {
	rc := &RouteCheck{e: e, seen: make(map[route][]echo.MiddlewareFunc)}
	prev := e.OnAddRouteHandler
	e.OnAddRouteHandler = func(host string, r echo.Route, h echo.HandlerFunc, mws []echo.MiddlewareFunc) {
		rc.mu.Lock()
		rc.seen[route{host, r.Method, r.Path}] = slices.Clone(mws)
		atAdd := rc.atAdd
		rc.mu.Unlock()
		if prev != nil {
			prev(host, r, h, mws)
		}
		if atAdd && r.Method != echo.RouteNotFound {
			if err := rc.checkRoute(at(host, r.Method, r.Path), routeParams(r.Path), mws); err != nil {
				panic(err) // Echo v4's answer to a route it cannot add
			}
		}
	}
	return rc
}

// Check walks e's route table (e.Routes(), and each host's from
// e.Routers()) and checks every Lock on every route against the route's
// path. Errors are joined, one per route and tag: each wraps ErrBadRule
// and a *keyexpr.TagError and names the method, path and tag, or wraps
// ErrNotChecked for a route added before NewRouteCheck. Nothing is
// served and no handler runs.
func (rc *RouteCheck) Check() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var errs []error
	check := func(host string, routes []*echo.Route) {
		for _, r := range routes {
			if r.Method == echo.RouteNotFound {
				continue // a 404 catch-all: a Lock lets it through unlocked
			}
			where := at(host, r.Method, r.Path)
			mws, ok := rc.seen[route{host, r.Method, r.Path}]
			if !ok {
				errs = append(errs, fmt.Errorf("%w: %s: added before CheckRoutes (or NewRouteCheck): call it right after echo.New()", ErrNotChecked, where))
				continue
			}
			if err := rc.checkRoute(where, routeParams(r.Path), mws); err != nil {
				errs = append(errs, err)
			}
		}
	}
	check("", rc.e.Routes())
	routers := rc.e.Routers()
	for _, host := range slices.Sorted(maps.Keys(routers)) {
		check(host, routers[host].Routes())
	}
	return errors.Join(errs...)
}

// at names a route in errors.
func at(host, method, path string) string {
	if host != "" {
		return method + " " + path + " (host " + host + ")"
	}
	return method + " " + path
}
