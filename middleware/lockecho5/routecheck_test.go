package lockecho5_test

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/labstack/echo/v5"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/middleware/lockecho5"
)

// registerPanic returns what add panicked with, or nil.
func registerPanic(add func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			var ok bool
			if err, ok = p.(error); !ok {
				err = errors.New("panic with a non-error")
			}
		}
	}()
	add()
	return nil
}

// TestCheckRoutesAtRegistration: with one CheckRoutes call before the
// routes, a route whose Lock names a path parameter the route lacks is
// refused when it is added — e.AddRoute returns the error, e.POST panics
// with it, naming the route and the tag, and the route is not added —
// while correct routes, groups and routes without a Lock are added; no
// handler runs and Redis is not touched.
func TestCheckRoutesAtRegistration(t *testing.T) {
	srv, lk := setup(t)
	var ran atomic.Int64
	h := func(c *echo.Context) error { ran.Add(1); return nil }
	before := evalCalls(t, srv)

	e := newEcho()
	if err := lockecho5.CheckRoutes(e); err != nil {
		t.Fatalf("CheckRoutes on a new Echo: %v", err)
	}
	for _, add := range []func(){
		func() { e.POST("/items/:id/buy", h, lockecho5.Lock(lk, `key:"item:{path.id}"`)) },
		func() { e.GET("/items/:id", h) },
		func() { e.PUT("/files/*", h, lockecho5.Lock(lk, `key:"file:{path.*}"`)) },
		func() {
			g := e.Group("/shops/:shop", lockecho5.Lock(lk, `key:"shop:{path.shop}"`))
			g.POST("/orders", h)
		},
	} {
		if err := registerPanic(add); err != nil {
			t.Fatalf("a correct route was refused: %v", err)
		}
	}

	err := registerPanic(func() {
		e.POST("/items/:name/hold", h, lockecho5.Lock(lk, `key:"k:{path.id}"`))
	})
	if !errors.Is(err, lockecho5.ErrBadRule) {
		t.Fatalf("the misconfigured route: %v, want a panic wrapping ErrBadRule", err)
	}
	if _, ok := errors.AsType[*keyexpr.TagError](err); !ok {
		t.Fatalf("%v: no *keyexpr.TagError", err)
	}
	for _, want := range []string{"POST /items/:name/hold", `k:{path.id}`, ":id", ":name"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%q does not say %q", err, want)
		}
	}
	_, err = e.AddRoute(echo.Route{Method: http.MethodPut, Path: "items/:name", Handler: h,
		Middlewares: []echo.MiddlewareFunc{lockecho5.Lock(lk, `key:"k:{path.id}"`)}})
	if !errors.Is(err, lockecho5.ErrBadRule) || !strings.Contains(err.Error(), "PUT /items/:name") {
		t.Fatalf("AddRoute: %v, want ErrBadRule naming PUT /items/:name", err)
	}
	for _, r := range e.Router().Routes() {
		if strings.HasPrefix(r.Path, "/items/:name") {
			t.Fatalf("a refused route was added: %s %s", r.Method, r.Path)
		}
	}
	if err := lockecho5.CheckRoutes(e); err != nil {
		t.Fatalf("CheckRoutes again, after the routes: %v", err)
	}
	if ran.Load() != 0 || evalCalls(t, srv) != before {
		t.Fatalf("the check ran %d handlers, %d scripts", ran.Load(), evalCalls(t, srv)-before)
	}
}

// TestCheckRoutesGroup: a group's Lock is checked on each route added to
// the group, not on the catch-all routes Echo adds for the group's 404s
// (a Lock lets those through unlocked), so a group Lock reading a
// parameter its routes have but its prefix lacks is fine.
func TestCheckRoutesGroup(t *testing.T) {
	_, lk := setup(t)
	e := newEcho()
	_ = lockecho5.CheckRoutes(e)
	var shops *echo.Group
	if err := registerPanic(func() { shops = e.Group("/shops", lockecho5.Lock(lk, `key:"shop:{path.shop}"`)) }); err != nil {
		t.Fatalf("a group Lock reading a parameter its routes have: %v", err)
	}
	if err := registerPanic(func() { shops.POST("/:shop/orders", leaseKey) }); err != nil {
		t.Fatalf("a route of that group with the parameter: %v", err)
	}
	if err := registerPanic(func() { shops.POST("/all", leaseKey) }); !errors.Is(err, lockecho5.ErrBadRule) || !strings.Contains(err.Error(), "POST /shops/all") {
		t.Fatalf("a route of that group without the parameter: %v", err)
	}
	var g *echo.Group
	if err := registerPanic(func() { g = e.Group("/users/:user", lockecho5.Lock(lk, `key:"user:{path.user}"`)) }); err != nil {
		t.Fatalf("a correct group: %v", err)
	}
	if err := registerPanic(func() { g.POST("/carts/:cart", leaseKey) }); err != nil {
		t.Fatalf("a correct route of the group: %v", err)
	}
	if err := registerPanic(func() { g.POST("/carts", leaseKey, lockecho5.Lock(lk, `key:"cart:{path.cart}"`)) }); !errors.Is(err, lockecho5.ErrBadRule) {
		t.Fatalf("a misconfigured route of the group: %v", err)
	}
}

// TestCheckRoutesLate: CheckRoutes after the routes cannot see their
// middleware: it fails with ErrNotChecked naming each, never nil.
func TestCheckRoutesLate(t *testing.T) {
	_, lk := setup(t)
	e := newEcho()
	e.POST("/items/:id", leaseKey, lockecho5.Lock(lk, `key:"item:{path.id}"`))
	err := lockecho5.CheckRoutes(e)
	if !errors.Is(err, lockecho5.ErrNotChecked) || !strings.Contains(err.Error(), "POST /items/:id") || !strings.Contains(err.Error(), "CheckRoutes") {
		t.Fatalf("%v: want POST /items/:id reported not checked", err)
	}
	if err := lockecho5.CheckRoutes(nil); !errors.Is(err, lockecho5.ErrNotChecked) {
		t.Fatalf("CheckRoutes(nil): %v", err)
	}
}

// TestCheckRoutesAfterNewRouteCheck: CheckRoutes goes on with the record
// of an earlier NewRouteCheck, whose Check still reports rather than
// refuses; the application's own hook is still called, and not for a
// refused route.
func TestCheckRoutesAfterNewRouteCheck(t *testing.T) {
	_, lk := setup(t)
	e := newEcho()
	var hooked []string
	e.OnAddRoute = func(r echo.Route) error {
		hooked = append(hooked, r.Method+" "+r.Path)
		return nil
	}
	rc := lockecho5.NewRouteCheck(e)
	e.POST("/a/:name", leaseKey, lockecho5.Lock(lk, `key:"a:{path.id}"`)) // recorded, not refused
	if err := rc.Check(); !errors.Is(err, lockecho5.ErrBadRule) {
		t.Fatalf("NewRouteCheck's Check: %v, want ErrBadRule", err)
	}
	if err := lockecho5.CheckRoutes(e); !errors.Is(err, lockecho5.ErrBadRule) || errors.Is(err, lockecho5.ErrNotChecked) {
		t.Fatalf("CheckRoutes after NewRouteCheck: %v, want the recorded route's ErrBadRule only", err)
	}
	if err := registerPanic(func() { e.POST("/b/:name", leaseKey, lockecho5.Lock(lk, `key:"b:{path.id}"`)) }); !errors.Is(err, lockecho5.ErrBadRule) {
		t.Fatalf("a route added after CheckRoutes: %v, want a panic wrapping ErrBadRule", err)
	}
	e.POST("/c/:id", leaseKey, lockecho5.Lock(lk, `key:"c:{path.id}"`))
	if want := []string{"POST /a/:name", "POST /c/:id"}; strings.Join(hooked, ",") != strings.Join(want, ",") {
		t.Fatalf("the application's hook saw %q, want %q", hooked, want)
	}
}

// TestCheckRoutesServes: a checked Echo serves its routes as before.
func TestCheckRoutesServes(t *testing.T) {
	_, lk := setup(t)
	e := newEcho()
	_ = lockecho5.CheckRoutes(e)
	e.POST("/items/:id", leaseKey, lockecho5.Lock(lk, `key:"item:{path.id}"`))
	if rec := do(e, http.MethodPost, "/items/7", ""); rec.Code != http.StatusOK || rec.Body.String() != "item:7" {
		t.Fatalf("%d %q", rec.Code, rec.Body)
	}
}
