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

// RouteCheck checks, before traffic, that the lock tags on an Echo
// instance's routes can be resolved on them: a {path.X} placeholder must
// name a parameter of the route its Lock is on. Found at request time
// instead, such a tag is answered with 500 and logged.
//
// Echo does not keep a route's middleware where it can be read back, so
// a RouteCheck records it as routes are added (e.OnAddRouteHandler; one
// the application set before is still called). Make it before
// registering routes, check after:
//
//	e := echo.New()
//	rc := lockecho.NewRouteCheck(e)
//	e.POST("/items/:id/buy", buy, lockecho.Lock(lk, `key:"item:{path.id}"`))
//	if err := rc.Check(); err != nil {
//		log.Fatal(err)
//	}
//
// It sees the Lock middlewares given to a route or to its group
// (e.Group, g.Use). A Lock installed with e.Use runs on every route and
// is not checked: give it a tag without {path.X}, or use LockRules, which
// checks its rules when it is built.
type RouteCheck struct {
	e    *echo.Echo
	mu   sync.Mutex
	seen map[route][]echo.MiddlewareFunc // the route middleware, as added
}

// route names one route of one host's router.
type route struct{ host, method, path string }

// NewRouteCheck starts recording e's routes as they are added. Routes
// added before it are reported by Check with ErrNotChecked.
func NewRouteCheck(e *echo.Echo) *RouteCheck {
	rc := &RouteCheck{e: e, seen: make(map[route][]echo.MiddlewareFunc)}
	prev := e.OnAddRouteHandler
	e.OnAddRouteHandler = func(host string, r echo.Route, h echo.HandlerFunc, mws []echo.MiddlewareFunc) {
		rc.mu.Lock()
		rc.seen[route{host, r.Method, r.Path}] = slices.Clone(mws)
		rc.mu.Unlock()
		if prev != nil {
			prev(host, r, h, mws)
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
			at := r.Method + " " + r.Path
			if host != "" {
				at += " (host " + host + ")"
			}
			mws, ok := rc.seen[route{host, r.Method, r.Path}]
			if !ok {
				errs = append(errs, fmt.Errorf("%w: %s: added before NewRouteCheck", ErrNotChecked, at))
				continue
			}
			for _, f := range rc.locksOn(mws) {
				if err := f.m.checkParams(f.spec, httpcore.EchoParams(r.Path)); err != nil {
					errs = append(errs, fmt.Errorf("%w: %s: %w", ErrBadRule, at, err))
				}
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
