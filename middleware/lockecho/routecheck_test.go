package lockecho_test

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/middleware/lockecho"
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
// refused when it is added — a panic naming the route and the tag, with
// no second call — while correct routes, groups and routes without a Lock
// are added; no handler runs and Redis is not touched.
func TestCheckRoutesAtRegistration(t *testing.T) {
	srv, lk := setup(t)
	var ran atomic.Int64
	h := func(c echo.Context) error { ran.Add(1); return nil }
	before := evalCalls(t, srv)

	e := newEcho()
	if err := lockecho.CheckRoutes(e); err != nil {
		t.Fatalf("CheckRoutes on a new Echo: %v", err)
	}
	for _, add := range []func(){
		func() { e.POST("/items/:id/buy", h, lockecho.Lock(lk, `key:"item:{path.id}"`)) },
		func() { e.GET("/items/:id", h) },
		func() { e.PUT("/files/*", h, lockecho.Lock(lk, `key:"file:{path.*}"`)) },
		func() {
			g := e.Group("/shops/:shop", lockecho.Lock(lk, `key:"shop:{path.shop}"`))
			g.POST("/orders", h)
		},
		func() { e.Host("api.example.com").POST("/carts/:user", h, lockecho.Lock(lk, `key:"cart:{path.user}"`)) },
	} {
		if err := registerPanic(add); err != nil {
			t.Fatalf("a correct route was refused: %v", err)
		}
	}

	err := registerPanic(func() {
		e.POST("/items/:name/hold", h, lockecho.Lock(lk, `key:"k:{path.id}"`))
	})
	if !errors.Is(err, lockecho.ErrBadRule) {
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
	err = registerPanic(func() {
		e.Host("api.example.com").POST("/carts/:owner/items", h, lockecho.Lock(lk, `key:"cart:{path.user}"`))
	})
	if !errors.Is(err, lockecho.ErrBadRule) || !strings.Contains(err.Error(), "(host api.example.com)") {
		t.Fatalf("a host's route: %v", err)
	}
	// Echo v4 adds a route before it reports it: one the panic was
	// recovered from stays in the table, and a second call reports it.
	err = lockecho.CheckRoutes(e)
	if !errors.Is(err, lockecho.ErrBadRule) || errors.Is(err, lockecho.ErrNotChecked) || strings.Count(err.Error(), "\n") != 1 {
		t.Fatalf("CheckRoutes again, after the routes: %v, want the two refused routes", err)
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
	_ = lockecho.CheckRoutes(e)
	var shops *echo.Group
	if err := registerPanic(func() { shops = e.Group("/shops", lockecho.Lock(lk, `key:"shop:{path.shop}"`)) }); err != nil {
		t.Fatalf("a group Lock reading a parameter its routes have: %v", err)
	}
	if err := registerPanic(func() { shops.POST("/:shop/orders", leaseKey) }); err != nil {
		t.Fatalf("a route of that group with the parameter: %v", err)
	}
	if err := registerPanic(func() { shops.POST("/all", leaseKey) }); !errors.Is(err, lockecho.ErrBadRule) || !strings.Contains(err.Error(), "POST /shops/all") {
		t.Fatalf("a route of that group without the parameter: %v", err)
	}
	var g *echo.Group
	if err := registerPanic(func() { g = e.Group("/users/:user", lockecho.Lock(lk, `key:"user:{path.user}"`)) }); err != nil {
		t.Fatalf("a correct group: %v", err)
	}
	if err := registerPanic(func() { g.POST("/carts/:cart", leaseKey) }); err != nil {
		t.Fatalf("a correct route of the group: %v", err)
	}
}

// TestCheckRoutesLate: CheckRoutes after the routes cannot see their
// middleware: it fails with ErrNotChecked naming each, never nil.
func TestCheckRoutesLate(t *testing.T) {
	_, lk := setup(t)
	e := newEcho()
	e.POST("/items/:id", leaseKey, lockecho.Lock(lk, `key:"item:{path.id}"`))
	err := lockecho.CheckRoutes(e)
	if !errors.Is(err, lockecho.ErrNotChecked) || !strings.Contains(err.Error(), "POST /items/:id") || !strings.Contains(err.Error(), "CheckRoutes") {
		t.Fatalf("%v: want POST /items/:id reported not checked", err)
	}
	if err := lockecho.CheckRoutes(nil); !errors.Is(err, lockecho.ErrNotChecked) {
		t.Fatalf("CheckRoutes(nil): %v", err)
	}
}

// TestCheckRoutesAfterNewRouteCheck: CheckRoutes goes on with the record
// of an earlier NewRouteCheck, whose Check still reports rather than
// refuses; the application's own hook is still called.
func TestCheckRoutesAfterNewRouteCheck(t *testing.T) {
	_, lk := setup(t)
	e := newEcho()
	var hooked []string
	e.OnAddRouteHandler = func(_ string, r echo.Route, _ echo.HandlerFunc, _ []echo.MiddlewareFunc) {
		hooked = append(hooked, r.Method+" "+r.Path)
	}
	rc := lockecho.NewRouteCheck(e)
	e.POST("/a/:name", leaseKey, lockecho.Lock(lk, `key:"a:{path.id}"`)) // recorded, not refused
	if err := rc.Check(); !errors.Is(err, lockecho.ErrBadRule) {
		t.Fatalf("NewRouteCheck's Check: %v, want ErrBadRule", err)
	}
	if err := lockecho.CheckRoutes(e); !errors.Is(err, lockecho.ErrBadRule) || errors.Is(err, lockecho.ErrNotChecked) {
		t.Fatalf("CheckRoutes after NewRouteCheck: %v, want the recorded route's ErrBadRule only", err)
	}
	if err := registerPanic(func() { e.POST("/b/:name", leaseKey, lockecho.Lock(lk, `key:"b:{path.id}"`)) }); !errors.Is(err, lockecho.ErrBadRule) {
		t.Fatalf("a route added after CheckRoutes: %v, want a panic wrapping ErrBadRule", err)
	}
	if len(hooked) != 2 || hooked[0] != "POST /a/:name" || hooked[1] != "POST /b/:name" {
		t.Fatalf("the application's hook saw %q", hooked)
	}
}

// TestCheckRoutesServes: a checked Echo serves its routes as before.
func TestCheckRoutesServes(t *testing.T) {
	_, lk := setup(t)
	e := newEcho()
	_ = lockecho.CheckRoutes(e)
	e.POST("/items/:id", leaseKey, lockecho.Lock(lk, `key:"item:{path.id}"`))
	if rec := do(e, http.MethodPost, "/items/7", ""); rec.Code != http.StatusOK || rec.Body.String() != "item:7" {
		t.Fatalf("%d %q", rec.Code, rec.Body)
	}
}
