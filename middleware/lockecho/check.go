package lockecho

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/middleware/lockecho/internal/httpcore"
)

// CheckRoutes makes e check the lock tags of its routes as they are added
// (e.OnAddRouteHandler; one the application set before is still called): a
// {path.X} must name a parameter of the route its Lock (on the route or its
// group) is on, or e.Add (e.POST, g.GET, ...) panics with an error wrapping
// ErrBadRule. Call it right after echo.New(): each route added before it is
// an error wrapping ErrNotChecked, and so is a nil e. Calling it again is
// harmless. A Lock installed with e.Use is not checked: give it a tag
// without {path.X}, or use LockRules. Every adapter's check: docs/routes.md.
func CheckRoutes(e *echo.Echo) error {
	if e == nil {
		return fmt.Errorf("%w: nil *echo.Echo", ErrNotChecked)
	}
	rc := routeCheckOf(e)
	rc.mu.Lock()
	rc.atAdd = true
	rc.mu.Unlock()
	return rc.Check()
}

// RouteCheck records the Lock middlewares of an Echo instance's routes as
// they are added (e.OnAddRouteHandler; one the application set before is
// still called) and checks their lock tags when Check is called: a
// {path.X} must name a parameter of the route its Lock is on. Make it with
// NewRouteCheck before the routes. A Lock installed with e.Use is not
// checked. CheckRoutes supersedes it: one call, before the routes, and each
// route is checked as it is added (docs/routes.md#older-names).
type RouteCheck struct {
	e     *echo.Echo
	mu    sync.Mutex
	seen  map[route][]echo.MiddlewareFunc // the route middleware, as added
	atAdd bool                            // check each route as it is added (CheckRoutes)
}

// route names one route of one host's router.
type route struct{ host, method, path string }

// NewRouteCheck starts recording e's routes as they are added. Routes
// added before it are reported by Check with ErrNotChecked. Prefer
// CheckRoutes, which also checks each route as it is added.
func NewRouteCheck(e *echo.Echo) *RouteCheck {
	rc := recordRoutes(e)
	checks.Put(e, rc)
	return rc
}

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
			if err := rc.checkRoute(at(host, r.Method, r.Path), r.Path, mws); err != nil {
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
			if err := rc.checkRoute(where, r.Path, mws); err != nil {
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

// checkRoute checks the Locks among one route's middleware mws against
// its path; where names the route in errors.
func (rc *RouteCheck) checkRoute(where, path string, mws []echo.MiddlewareFunc) error {
	var errs []error
	for _, f := range rc.locksOn(mws) {
		if err := f.m.checkParams(f.spec, httpcore.EchoParams(path)); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrBadRule, where, err))
		}
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

// lockMiddleware is the code of every Lock's middleware.
var lockMiddleware = reflect.ValueOf((*locks)(nil).middleware(nil)).Pointer()

// locksOn returns the tags of the Lock middlewares among mws: each is
// asked through a probe request, which it answers without running
// anything else.
func (rc *RouteCheck) locksOn(mws []echo.MiddlewareFunc) []probed {
	p := &probe{}
	for _, mw := range mws {
		if mw == nil || reflect.ValueOf(mw).Pointer() != lockMiddleware {
			continue
		}
		req, _ := http.NewRequestWithContext(context.WithValue(context.Background(), probeKey{}, p), http.MethodGet, "/", nil)
		_ = mw(probeNext)(rc.e.NewContext(req, nil))
	}
	return p.found
}

// probeNext stands for the rest of a chain a Lock is asked about; a Lock
// answers a probe without calling it.
func probeNext(echo.Context) error { return nil }

// probeKey is the context key of a RouteCheck probe.
type probeKey struct{}

// probe collects the tags the Lock middlewares of one route reported.
type probe struct{ found []probed }

// probed is one Lock's report: its settings and its tag.
type probed struct {
	m    *locks
	spec *keyexpr.Spec
}

func probeOf(c echo.Context) *probe {
	r := c.Request()
	if r == nil {
		return nil
	}
	p, _ := r.Context().Value(probeKey{}).(*probe)
	return p
}

// checks finds the RouteCheck recording an Echo instance's routes, so
// that CheckRoutes called twice, or after NewRouteCheck, goes on with the
// same record. It holds neither: an entry goes when its Echo does.
var checks httpcore.PerRouter[echo.Echo, RouteCheck]

// routeCheckOf returns e's RouteCheck, installing one if it has none.
func routeCheckOf(e *echo.Echo) *RouteCheck {
	return checks.GetOrPut(e, func() *RouteCheck { return recordRoutes(e) })
}
