package lockecho5_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/labstack/echo/v5"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockecho5"
)

// TestPathFromRoute: {path.X} reads Echo's route parameter, {route} the
// route's path as registered, whether the Lock is on the route, on its
// group, or installed with e.Use (Echo routes before the e.Use chain).
func TestPathFromRoute(t *testing.T) {
	_, lk := setup(t)
	tag := `key:"item:{path.id}:{route}"`
	e := newEcho()
	e.POST("/items/:id/buy", leaseKey, lockecho5.Lock(lk, tag))
	g := e.Group("/g", lockecho5.Lock(lk, tag))
	g.POST("/items/:id", leaseKey)
	global := newEcho()
	global.Use(lockecho5.Lock(lk, tag))
	global.POST("/items/:id/buy", leaseKey)
	for _, c := range []struct {
		name   string
		h      http.Handler
		target string
		want   string
	}{
		// A value's ':' is escaped, so it cannot forge a separator.
		{"route", e, "/items/42/buy", "item:42:/items/%3Aid/buy"},
		{"group", e, "/g/items/7", "item:7:/g/items/%3Aid"},
		{"e.Use", global, "/items/42/buy", "item:42:/items/%3Aid/buy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := do(c.h, http.MethodPost, c.target, "")
			if rec.Code != http.StatusOK || rec.Body.String() != c.want {
				t.Fatalf("%d %q, want 200 %q", rec.Code, rec.Body, c.want)
			}
		})
	}
}

// TestPreIsTooEarly: e.Pre runs before Echo routes the request, so a
// {path.X} there has no route to read: the tag mistake (500, logged), never
// a 400 the client could not fix and never the handler unlocked.
func TestPreIsTooEarly(t *testing.T) {
	_, lk := setup(t)
	var log bytes.Buffer
	ran := false
	e := newEcho()
	e.Pre(lockecho5.Lock(lk, `key:"item:{path.id}"`, guard.WithLogger(slog.New(slog.NewTextHandler(&log, nil)))))
	e.POST("/items/:id", func(c *echo.Context) error { ran = true; return nil })
	rec := do(e, http.MethodPost, "/items/42", "")
	if rec.Code != http.StatusInternalServerError || ran || !problemType(t, rec.Body.Bytes(), "lock-tag-mistake") {
		t.Fatalf("%d (ran %v): %s", rec.Code, ran, rec.Body)
	}
	if !strings.Contains(log.String(), "item:{path.id}") {
		t.Fatalf("log %q does not name the tag", log.String())
	}
}

// TestTagMistakeAtRequest: a template naming a path parameter the route
// lacks is the server's mistake: 500 and a log line naming the tag and
// the route; the handler does not run and Redis is not touched.
func TestTagMistakeAtRequest(t *testing.T) {
	srv, lk := setup(t)
	var log bytes.Buffer
	ran := false
	e := newEcho()
	e.POST("/orders/:id/pay", func(c *echo.Context) error { ran = true; return nil },
		lockecho5.Lock(lk, `key:"order:{path.orderId}"`, guard.WithLogger(slog.New(slog.NewTextHandler(&log, nil)))))
	before := evalCalls(t, srv)
	rec := do(e, http.MethodPost, "/orders/7/pay", "")
	if rec.Code != http.StatusInternalServerError || ran || !problemType(t, rec.Body.Bytes(), "lock-tag-mistake") {
		t.Fatalf("%d (ran %v): %s", rec.Code, ran, rec.Body)
	}
	if line := log.String(); !strings.Contains(line, "order:{path.orderId}") || !strings.Contains(line, "/orders/:id/pay") {
		t.Fatalf("log line %q names neither the tag nor the route", line)
	}
	if evalCalls(t, srv) != before {
		t.Fatal("Redis was touched")
	}
}

// TestRouteCheck: the start-up check walks the route table and reports
// each tag naming a parameter its route lacks, with the route and the tag,
// without running any handler or touching Redis; a correct table passes.
func TestRouteCheck(t *testing.T) {
	srv, lk := setup(t)
	var ran atomic.Int64
	h := func(c *echo.Context) error { ran.Add(1); return nil }
	build := func(itemTag string) (*echo.Echo, *lockecho5.RouteCheck) {
		e := newEcho()
		rc := lockecho5.NewRouteCheck(e)
		e.POST("/items/:id/buy", h,
			lockecho5.Idempotency(lk, guard.WithPublicScope()),
			lockecho5.Lock(lk, `key:"api:{header.X-User}" rate:"5/s"`),
			lockecho5.Lock(lk, itemTag))
		e.GET("/items/:id", h) // no lock
		e.PUT("/files/*", h, lockecho5.Lock(lk, `key:"file:{path.*}"`))
		g := e.Group("/shops/:shop", lockecho5.Lock(lk, `key:"shop:{path.shop}"`))
		g.POST("/orders", h)
		e.Use(lockecho5.LockRules(lk, lockecho5.Rules{"DELETE /x/:id": `key:"x:{path.id}"`}))
		e.DELETE("/x/:id", h)
		return e, rc
	}
	before := evalCalls(t, srv)
	_, rc := build(`key:"item:{path.id}"`)
	if err := rc.Check(); err != nil {
		t.Fatalf("a correct table: %v", err)
	}

	_, rc = build(`key:"item:{path.sku}"`)
	err := rc.Check()
	if !errors.Is(err, lockecho5.ErrBadRule) {
		t.Fatalf("%v, want ErrBadRule", err)
	}
	if _, ok := errors.AsType[*keyexpr.TagError](err); !ok {
		t.Fatalf("%v: no *keyexpr.TagError", err)
	}
	for _, want := range []string{"POST /items/:id/buy", "item:{path.sku}", ":sku", ":id"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%q does not say %q", err, want)
		}
	}
	if strings.Count(err.Error(), "\n") != 0 {
		t.Fatalf("one mistake, more errors: %v", err)
	}
	if ran.Load() != 0 || evalCalls(t, srv) != before {
		t.Fatalf("the check ran %d handlers, %d scripts", ran.Load(), evalCalls(t, srv)-before)
	}
}

// TestRouteCheckGroup: a group's Lock is checked on each of its routes.
func TestRouteCheckGroup(t *testing.T) {
	_, lk := setup(t)
	e := newEcho()
	rc := lockecho5.NewRouteCheck(e)
	g := e.Group("/shops", lockecho5.Lock(lk, `key:"shop:{path.shop}"`))
	g.POST("/:shop/orders", leaseKey)
	g.POST("/all", leaseKey)
	err := rc.Check()
	if !errors.Is(err, lockecho5.ErrBadRule) || !strings.Contains(err.Error(), "POST /shops/all") || strings.Contains(err.Error(), "/:shop/orders") {
		t.Fatalf("%v: want exactly POST /shops/all reported", err)
	}
}

// TestRouteCheckLate: routes added before NewRouteCheck are reported as
// not checked, and an OnAddRouteHandler set before is still called.
func TestRouteCheckLate(t *testing.T) {
	_, lk := setup(t)
	e := newEcho()
	e.POST("/early/:id", leaseKey, lockecho5.Lock(lk, `key:"e:{path.id}"`))
	var hooked []string
	e.OnAddRoute = func(r echo.Route) error {
		hooked = append(hooked, r.Method+" "+r.Path)
		return nil
	}
	rc := lockecho5.NewRouteCheck(e)
	e.POST("/late/:id", leaseKey, lockecho5.Lock(lk, `key:"l:{path.id}"`))
	err := rc.Check()
	if !errors.Is(err, lockecho5.ErrNotChecked) || errors.Is(err, lockecho5.ErrBadRule) || !strings.Contains(err.Error(), "/early/:id") {
		t.Fatalf("%v: want /early/:id not checked", err)
	}
	if len(hooked) != 1 || hooked[0] != "POST /late/:id" {
		t.Fatalf("the earlier hook saw %q", hooked)
	}
}

// TestLockRules: a rule table from e.Use locks the routes it names, with
// Echo's route paths; others pass through; a rule naming a parameter its
// route lacks fails when built; Rules.Check finds rules naming no route.
func TestLockRules(t *testing.T) {
	_, lk := setup(t)
	rules := lockecho5.Rules{
		"POST /orders/:id/pay": `key:"order:{path.id}"`,
		"PUT /carts/:user":     `key:"cart:{path.user}"`,
	}
	e := newEcho()
	e.Use(lockecho5.LockRules(lk, rules))
	e.POST("/orders/:id/pay", leaseKey)
	e.GET("/orders/:id", leaseKey)
	if rec := do(e, http.MethodPost, "/orders/9/pay", ""); rec.Body.String() != "order:9" {
		t.Fatalf("locked route: %d %q", rec.Code, rec.Body)
	}
	if rec := do(e, http.MethodGet, "/orders/9", ""); rec.Code != http.StatusOK || rec.Body.String() != "" {
		t.Fatalf("other route: %d %q", rec.Code, rec.Body)
	}
	err := rules.Check(e.Router().Routes())
	if !errors.Is(err, lockecho5.ErrBadRule) || !strings.Contains(err.Error(), "PUT /carts/:user") {
		t.Fatalf("Rules.Check: %v", err)
	}

	_, err = lockecho5.NewLockRules(lk, lockecho5.Rules{"POST /orders/:id": `key:"order:{path.orderId}"`})
	if !errors.Is(err, lockecho5.ErrBadRule) || !strings.Contains(err.Error(), "POST /orders/:id") {
		t.Fatalf("bad rule: %v", err)
	}
	_, err = lockecho5.NewLockRules(lk, lockecho5.Rules{"post /orders/:id": `key:"order:{path.id}"`})
	if !errors.Is(err, lockecho5.ErrBadRule) {
		t.Fatalf("bad rule key: %v", err)
	}
}

// TestHandlerErrorAnsweredUnderLock: an error the handler returns is
// answered by Echo's error handler while the lock is held, and a keep tag
// keeps the lock only after a 2xx.
func TestHandlerErrorAnsweredUnderLock(t *testing.T) {
	_, lk := setup(t)
	var heldWhenAnswered atomic.Bool
	e := newEcho()
	def := echo.DefaultHTTPErrorHandler(false)
	e.HTTPErrorHandler = func(c *echo.Context, err error) {
		if r, _ := echo.UnwrapResponse(c.Response()); r != nil && !r.Committed { // Echo calls it again with the returned error
			heldWhenAnswered.Store(locker.FromContext(c.Request().Context()) != nil)
		}
		def(c, err)
	}
	e.POST("/items/:id", func(c *echo.Context) error {
		return echo.NewHTTPError(http.StatusNotFound, "no such item")
	}, lockecho5.Lock(lk, `key:"item:{path.id}" keep:"1m"`))
	rec := do(e, http.MethodPost, "/items/1", "")
	if rec.Code != http.StatusNotFound || !heldWhenAnswered.Load() {
		t.Fatalf("%d, answered under the lock: %v", rec.Code, heldWhenAnswered.Load())
	}
	le, err := lk.Obtain(t.Context(), "item:1", locker.Params{})
	if err != nil {
		t.Fatalf("a 404 kept the lock: %v", err)
	}
	_ = le.Release(t.Context())
}

// TestSources: the built-in sources read the request as Echo sees it.
func TestSources(t *testing.T) {
	_, lk := setup(t)
	cases := []struct {
		tag, body, ct, want string
		hdr                 []string
	}{
		{`key:"q:{query.a}"`, "", "", "q:1", nil},
		{`key:"h:{header.X-User}"`, "", "", "h:ann", []string{"X-User", "ann"}},
		{`key:"m:{method}"`, "", "", "m:POST", nil},
		{`key:"f:{form.sku}"`, "sku=abc", echo.MIMEApplicationForm, "f:abc", nil},
		{`key:"b:{body.item.sku}"`, `{"item":{"sku":12345678901234567890}}`, echo.MIMEApplicationJSON, "b:12345678901234567890", nil},
		{`key:"c:{ctx.user}"`, "", "", "c:u1", nil},
		{`key:"ip:{ip}"`, "", "", "ip:192.0.2.1", []string{"X-Forwarded-For", "203.0.113.9"}},
	}
	for _, c := range cases {
		t.Run(c.tag, func(t *testing.T) {
			e := newEcho()
			e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
				return func(c *echo.Context) error { c.Set("user", "u1"); return next(c) }
			})
			e.POST("/s/:id", func(c *echo.Context) error {
				b := make([]byte, 64)
				n, _ := c.Request().Body.Read(b)
				if c.Request().Header.Get("Content-Type") == echo.MIMEApplicationJSON && string(b[:n]) != c.Request().Header.Get("X-Want-Body") {
					return c.String(http.StatusTeapot, "body not restored")
				}
				return leaseKey(c)
			}, lockecho5.Lock(lk, c.tag, lockecho5.WithSource("ctx", lockecho5.ContextKeys("user"))))
			hdr := append([]string{"X-Want-Body", c.body}, c.hdr...)
			if c.ct != "" {
				hdr = append(hdr, "Content-Type", c.ct)
			}
			rec := do(e, http.MethodPost, "/s/1?a=1", c.body, hdr...)
			if rec.Code != http.StatusOK || rec.Body.String() != c.want {
				t.Fatalf("%d %q, want %q", rec.Code, rec.Body, c.want)
			}
		})
	}
	_, err := lockecho5.NewLock(lk, `key:"c:{ctx.tenant}"`, lockecho5.WithSource("ctx", lockecho5.ContextKeys("user")))
	if !errors.Is(err, keyexpr.ErrUnknownSource) && err == nil {
		t.Fatal("a key outside ContextKeys' list was accepted")
	}
	if rec := do(func() *echo.Echo {
		e := newEcho()
		e.POST("/s", leaseKey, lockecho5.Lock(lk, `key:"q:{query.a}"`))
		return e
	}(), http.MethodPost, "/s", ""); rec.Code != http.StatusBadRequest || !problemType(t, rec.Body.Bytes(), "bad-lock-key") {
		t.Fatalf("missing value: %d %s", rec.Code, rec.Body)
	}
}

// TestConstructionErrors: a bad tag, a nil Locker, an option for the
// other kind of guard fail when the middleware is built.
func TestConstructionErrors(t *testing.T) {
	_, lk := setup(t)
	if _, err := lockecho5.NewLock(nil, `key:"a"`); !errors.Is(err, guard.ErrNilLocker) {
		t.Fatalf("nil locker: %v", err)
	}
	if _, err := lockecho5.NewLock(lk, `key:"a:{nosuch.x}"`); !errors.Is(err, keyexpr.ErrUnknownSource) {
		t.Fatalf("unknown source: %v", err)
	}
	if _, err := lockecho5.NewLock(lk, `key:"a" wait:"soon"`); err == nil {
		t.Fatal("bad duration accepted")
	}
	if _, err := lockecho5.NewLock(lk, `key:"a"`, lockecho5.WithKeyHeader("X-Key")); !errors.Is(err, locker.ErrBadOption) {
		t.Fatalf("idempotency option on a lock: %v", err)
	}
	if _, err := lockecho5.NewIdempotency(lk); !errors.Is(err, guard.ErrNoScope) {
		t.Fatalf("no scope: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Lock did not panic on a bad tag")
		}
	}()
	lockecho5.Lock(lk, `key:""`)
}
