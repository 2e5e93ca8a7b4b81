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

// CheckRoutes makes e check the lock tags of its routes: a {path.X}
// placeholder must name a parameter of the route its Lock is on. Call it
// right after echo.New(), before the first route:
//
//	e := echo.New()
//	if err := lockecho5.CheckRoutes(e); err != nil {
//		log.Fatal(err)
//	}
//	e.POST("/items/:id/buy", buy, lockecho5.Lock(lk, `key:"item:{path.id}"`)) // checked here
//
// From then on each route is checked as it is added (e.OnAddRoute; one
// the application set before is still called): a tag its route cannot
// resolve is an error wrapping ErrBadRule that names the method, path and
// tag, which e.AddRoute returns and e.Add (e.POST, g.GET, ...) panics
// with, and the route is not added. Echo's route table (RouteInfo) does
// not show a route's middleware, so the routes cannot be checked later.
//
// CheckRoutes returns the check of the routes e has already: nil for
// those added since an earlier CheckRoutes (or NewRouteCheck) on e, an
// error wrapping ErrNotChecked for each one added before — so a call after
// the routes fails loudly instead of checking nothing. Calling it again is
// harmless. It sees the Lock middlewares given to a route or to its group
// (e.Group, g.Use); a Lock installed with e.Use runs on every route and
// is not checked: give it a tag without {path.X}, or use LockRules, which
// checks its rules when it is built. Without CheckRoutes such a tag is
// found at the first request of the route: answered with 500 and logged
// (docs/routes.md). Nothing is served and no handler runs.
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

// RouteCheck checks, before traffic, that the lock tags on an Echo
// instance's routes can be resolved on them: a {path.X} placeholder must
// name a parameter of the route its Lock is on. Found at request time
// instead, such a tag is answered with 500 and logged.
//
// Echo's route table (RouteInfo) does not show a route's middleware, so a
// RouteCheck records it as routes are added (e.OnAddRoute; one the
// application set before is still called). Make it before registering
// routes, check after:
//
//	e := echo.New()
//	rc := lockecho5.NewRouteCheck(e)
//	e.POST("/items/:id/buy", buy, lockecho5.Lock(lk, `key:"item:{path.id}"`))
//	if err := rc.Check(); err != nil {
//		log.Fatal(err)
//	}
//
// It sees the Lock middlewares given to a route or to its group
// (e.Group, g.Use). A Lock installed with e.Use runs on every route and
// is not checked: give it a tag without {path.X}, or use LockRules, which
// checks its rules when it is built.
//
// CheckRoutes supersedes it: one call, before the routes, and each route
// is checked as it is added (docs/routes.md).
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
