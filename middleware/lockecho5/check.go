package lockecho5

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/labstack/echo/v5"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/middleware/lockecho5/internal/httpcore"
)

// CheckRoutes makes e check the lock tags of its routes as they are added
// (e.OnAddRoute; one the application set before is still called): a
// {path.X} must name a parameter of the route its Lock (on the route or its
// group) is on, or e.AddRoute returns an error wrapping ErrBadRule, e.Add
// (e.POST, g.GET, ...) panics with it, and the route is not added. Call it
// right after echo.New(): each route added before it is an error wrapping
// ErrNotChecked, and so is a nil e. Calling it again is harmless. A Lock
// installed with e.Use is not checked: give it a tag without {path.X}, or
// use LockRules. Every adapter's check: docs/routes.md.
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
// they are added (e.OnAddRoute; one the application set before is
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

// route names one route.
type route struct{ method, path string }

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
			if err := rc.checkRoute(r.Method+" "+path, httpcore.EchoParams(path), r.Middlewares); err != nil {
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

// checkRoute checks the Locks among one route's middleware mws against
// its parameters; at names the route in errors.
func (rc *RouteCheck) checkRoute(at string, params []string, mws []echo.MiddlewareFunc) error {
	var errs []error
	for _, f := range rc.locksOn(mws) {
		if err := f.m.checkParams(f.spec, params); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrBadRule, at, err))
		}
	}
	return errors.Join(errs...)
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
func probeNext(*echo.Context) error { return nil }

// probeKey is the context key of a RouteCheck probe.
type probeKey struct{}

// probe collects the tags the Lock middlewares of one route reported.
type probe struct{ found []probed }

// probed is one Lock's report: its settings and its tag.
type probed struct {
	m    *locks
	spec *keyexpr.Spec
}

func probeOf(c *echo.Context) *probe {
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
