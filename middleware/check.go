package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/keyexpr"
)

// RouteCheck returns the middleware CheckRoutes needs: install it first,
// before any route is registered,
//
//	r := gin.New()
//	r.Use(middleware.RouteCheck())
//
// For ordinary requests it only calls c.Next. For CheckRoutes' probe
// requests it stops every route whose chain has no Lock middleware, so no
// handler ever runs for a probe.
func RouteCheck() gin.HandlerFunc { return routeCheck }

func routeCheck(c *gin.Context) {
	p := probeOf(c)
	if p == nil {
		return
	}
	p.gated, p.names = true, c.HandlerNames()
	p.lockers = countFunc(p.names, isLockHandler)
	if p.lockers == 0 {
		c.Abort() // nothing to check; the handler must not run
	}
}

// lockHandlerName is the name of every Lock's middleware: the closures
// (*locks).handler makes.
var lockHandlerName = runtime.FuncForPC(reflect.ValueOf((*locks).handler).Pointer()).Name() + ".func"

func isLockHandler(name string) bool { return strings.HasPrefix(name, lockHandlerName) }

// CheckRoutes checks, before traffic, that every {path.X} in the lock tags
// on e's routes names a parameter of the route its Lock is on. It sends one
// probe request per route through e, which RouteCheck, e's first middleware,
// stops before any handler (without it: ErrNotChecked, nothing sent). Every
// Lock of a route is checked; a route whose chain stops the probe before its
// Lock (authentication) is reported with ErrNotChecked. Errors are joined,
// each wrapping ErrBadRule or ErrNotChecked. LockRules checks its own rules.
// Guide: docs/gin.md; every adapter's check: docs/routes.md.
func CheckRoutes(e *gin.Engine) error {
	if len(e.Handlers) == 0 || !isRouteCheck(e.Handlers[0]) {
		return fmt.Errorf("%w: install middleware.RouteCheck() as the engine's first middleware", ErrNotChecked)
	}
	var errs []error
	for _, ri := range e.Routes() {
		p := &probe{}
		req, err := http.NewRequestWithContext(context.WithValue(context.Background(), probeKey{}, p), ri.Method, samplePath(ri.Path), nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s %s: %w", ErrNotChecked, ri.Method, ri.Path, err))
			continue
		}
		w := &probeWriter{h: http.Header{}}
		e.ServeHTTP(w, req)
		switch {
		case !p.gated:
			errs = append(errs, fmt.Errorf("%w: %s %s: RouteCheck did not run first on it", ErrNotChecked, ri.Method, ri.Path))
		case p.locks == 0 && slices.ContainsFunc(p.names, isLockHandler):
			errs = append(errs, fmt.Errorf("%w: %s %s: a middleware before the lock answered the probe (%d)", ErrNotChecked, ri.Method, ri.Path, w.code))
		}
		for _, err := range p.errs {
			errs = append(errs, fmt.Errorf("%w: %s %s: %w", ErrBadRule, ri.Method, ri.Path, err))
		}
	}
	return errors.Join(errs...)
}

func isRouteCheck(h gin.HandlerFunc) bool {
	return reflect.ValueOf(h).Pointer() == reflect.ValueOf(routeCheck).Pointer()
}

// samplePath fills a route pattern's parameters with a value no static
// route is likely to have.
func samplePath(pattern string) string {
	segs := strings.Split(pattern, "/")
	for i, s := range segs {
		if len(s) > 1 && (s[0] == ':' || s[0] == '*') {
			segs[i] = "locktag-probe"
		}
	}
	return strings.Join(segs, "/")
}

// probeKey is the context key of a CheckRoutes probe.
type probeKey struct{}

// probe collects what one probe request found.
type probe struct {
	gated   bool
	names   []string
	lockers int // the Lock handlers in the route's chain
	locks   int // those the probe went through
	errs    []error
}

// IsProbe reports whether c is one of CheckRoutes' probe requests, for
// middleware between RouteCheck and a Lock that should ignore it — e.g. an
// access log: gin.LoggerWithConfig(gin.LoggerConfig{Skip: middleware.IsProbe}).
func IsProbe(c *gin.Context) bool { return probeOf(c) != nil }

func probeOf(c *gin.Context) *probe {
	if c.Request == nil {
		return nil
	}
	p, _ := c.Request.Context().Value(probeKey{}).(*probe)
	return p
}

// check verifies spec against the probed route and stops the chain at
// its last Lock (a rate tag chained before a lock tag: both are checked).
func (p *probe) check(c *gin.Context, m *locks, spec *keyexpr.Spec) {
	p.locks++
	if err := m.checkParams(spec, routeParams(c.FullPath())); err != nil {
		p.errs = append(p.errs, err)
	}
	if p.locks < p.lockers {
		return // gin goes on to the next handler, up to the next Lock
	}
	c.Abort()
}

func countFunc(names []string, f func(string) bool) int {
	n := 0
	for _, s := range names {
		if f(s) {
			n++
		}
	}
	return n
}

// probeWriter discards a probe's response.
type probeWriter struct {
	h    http.Header
	code int
}

func (w *probeWriter) Header() http.Header         { return w.h }
func (w *probeWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *probeWriter) WriteHeader(code int)        { w.code = code }
