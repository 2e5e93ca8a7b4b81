package lockecho5

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/labstack/echo/v5"
)

// route names one route.
type route struct{ method, path string }

// recordRoutes installs a RouteCheck's hook on e.
func recordRoutes(e *echo.Echo) *RouteCheck {
	rc := &RouteCheck{e: e, seen: make(map[route][]echo.MiddlewareFunc)}
	prev := e.OnAddRoute
	e.OnAddRoute = func(r echo.Route) error {
		path := slashed(r.Path)
		rc.mu.Lock()
		atAdd := rc.atAdd
		if !atAdd {
			rc.seen[route{r.Method, path}] = slices.Clone(r.Middlewares)
		}
		rc.mu.Unlock()
		if atAdd && r.Method != echo.RouteNotFound { // a 404 catch-all: a Lock lets it through unlocked
			// Checked before Echo adds it: a refused route is not added.
			if err := rc.checkRoute(r.Method+" "+path, routeParams(path), r.Middlewares); err != nil {
				return err
			}
			rc.mu.Lock()
			rc.seen[route{r.Method, path}] = slices.Clone(r.Middlewares)
			rc.mu.Unlock()
		}
		if prev != nil {
			return prev(r)
		}
		return nil
	}
	return rc
}

// slashed is path as Echo's router registers it: with a leading slash.
func slashed(path string) string {
	if !strings.HasPrefix(path, "/") {
		return "/" + path
	}
	return path
}

// Check walks e's route table (e.Router().Routes()) and checks every Lock
// on every route against the route's parameters. Errors are joined, one
// per route and tag: each wraps ErrBadRule and a *keyexpr.TagError and
// names the method, path and tag, or wraps ErrNotChecked for a route
// added before NewRouteCheck. Nothing is served and no handler runs.
func (rc *RouteCheck) Check() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var errs []error
	for _, r := range rc.e.Router().Routes() {
		if r.Method == echo.RouteNotFound {
			continue // a 404 catch-all: a Lock lets it through unlocked
		}
		at := r.Method + " " + r.Path
		mws, ok := rc.seen[route{r.Method, r.Path}]
		if !ok {
			errs = append(errs, fmt.Errorf("%w: %s: added before CheckRoutes (or NewRouteCheck): call it right after echo.New()", ErrNotChecked, at))
			continue
		}
		if err := rc.checkRoute(at, r.Parameters, mws); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
