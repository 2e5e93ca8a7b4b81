package lockfiber_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/middleware/lockfiber"
)

// registerPanic returns what add panicked with, or nil.
func registerPanic(add func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			var ok bool
			if err, ok = p.(error); !ok {
				err = fmt.Errorf("panic with a non-error: %v", p)
			}
		}
	}()
	add()
	return nil
}

// scripts counts the scripts srv has run.
func scripts(t *testing.T, srv *redistest.Server) string {
	t.Helper()
	s, err := redis.String(srv.Do("INFO", "commandstats"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.Lines(s) {
		if strings.HasPrefix(line, "cmdstat_eval") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return strings.Join(out, ";")
}

// TestCheckRoutesAtRegistration: after one CheckRoutes call, made before
// the routes, a route whose Lock names a path parameter the route lacks,
// and a Use Lock reading {route}, are refused as they are registered — a
// panic naming the route and the tag, with no second call — while correct
// routes, groups and routes without a Lock are registered; no handler runs
// and Redis is not touched.
func TestCheckRoutesAtRegistration(t *testing.T) {
	srv := redistest.Start(t)
	lk := lockertest.NewLocker(t, srv)
	var ran atomic.Int64
	h := func(c fiber.Ctx) error { ran.Add(1); return c.SendStatus(http.StatusNoContent) }
	before := scripts(t, srv)

	app := fiber.New()
	if err := lockfiber.CheckRoutes(app); err != nil {
		t.Fatalf("CheckRoutes on a new app: %v", err)
	}
	for name, add := range map[string]func(){
		"route":        func() { app.Post("/items/:id/buy", lockfiber.Lock(lk, `key:"item:{path.id}"`), h) },
		"no lock":      func() { app.Get("/items/:id", h) },
		"wildcard":     func() { app.Put("/files/*", lockfiber.Lock(lk, `key:"file:{path.*}"`), h) },
		"use, no path": func() { app.Use(lockfiber.Lock(lk, `key:"ip:{ip}" rate:"10/1s"`)) },
		"group": func() {
			g := app.Group("/shops/:shop")
			g.Post("/orders", lockfiber.Lock(lk, `key:"shop:{path.shop}"`), h)
		},
		"use with the parameter": func() { app.Use("/users/:user", lockfiber.Lock(lk, `key:"user:{path.user}"`)) },
	} {
		if err := registerPanic(add); err != nil {
			t.Fatalf("%s: a correct route was refused: %v", name, err)
		}
	}

	err := registerPanic(func() { app.Post("/items/:name/hold", lockfiber.Lock(lk, `key:"k:{path.id}"`), h) })
	if !errors.Is(err, lockfiber.ErrBadRule) {
		t.Fatalf("the misconfigured route: %v, want a panic wrapping ErrBadRule", err)
	}
	if _, ok := errors.AsType[*keyexpr.TagError](err); !ok {
		t.Fatalf("%v: no *keyexpr.TagError", err)
	}
	for _, want := range []string{"POST /items/:name/hold", "k:{path.id}", ":id", ":name"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%q does not say %q", err, want)
		}
	}
	err = registerPanic(func() { app.Use("/api", lockfiber.Lock(lk, `key:"{route}"`)) })
	if !errors.Is(err, lockfiber.ErrBadRule) || !strings.Contains(err.Error(), "/api (a Use handler)") || !strings.Contains(err.Error(), "{route}") {
		t.Fatalf("a Use Lock reading {route}: %v", err)
	}
	err = registerPanic(func() { app.Group("/carts").Get("/:cart", lockfiber.Lock(lk, `key:"cart:{path.id}"`), h) })
	if !errors.Is(err, lockfiber.ErrBadRule) || !strings.Contains(err.Error(), "GET /carts/:cart") {
		t.Fatalf("a group's route: %v", err)
	}
	if ran.Load() != 0 || scripts(t, srv) != before {
		t.Fatalf("the check ran %d handlers, scripts %q -> %q", ran.Load(), before, scripts(t, srv))
	}
}

// TestCheckRoutesLaterRoutes: CheckRoutes called after some routes
// checks those, and refuses a misconfigured route registered after it.
func TestCheckRoutesLaterRoutes(t *testing.T) {
	lk := lockertest.NewLocker(t, redistest.Start(t))
	app := fiber.New()
	app.Post("/a/:id", lockfiber.Lock(lk, `key:"a:{path.id}"`), keyOf)
	if err := lockfiber.CheckRoutes(app); err != nil {
		t.Fatal(err)
	}
	if err := lockfiber.CheckRoutes(app); err != nil {
		t.Fatalf("a second call: %v", err)
	}
	if err := registerPanic(func() { app.Post("/b/:name", lockfiber.Lock(lk, `key:"b:{path.id}"`), keyOf) }); !errors.Is(err, lockfiber.ErrBadRule) {
		t.Fatalf("a route after CheckRoutes: %v, want a panic wrapping ErrBadRule", err)
	}
	if err := lockfiber.CheckRoutes(nil); !errors.Is(err, lockfiber.ErrNotChecked) {
		t.Fatalf("CheckRoutes(nil): %v", err)
	}
}

// TestCheckRoutesRegisteredTwice: Fiber merges a route registered again
// with the same method and path into the first; the Lock of the second
// registration is checked as the route's, not as a Use handler's.
func TestCheckRoutesRegisteredTwice(t *testing.T) {
	lk := lockertest.NewLocker(t, redistest.Start(t))
	app := fiber.New()
	_ = lockfiber.CheckRoutes(app)
	app.Get("/a/:id", func(c fiber.Ctx) error { return c.Next() })
	if err := registerPanic(func() { app.Get("/a/:id", lockfiber.Lock(lk, `key:"{route}:{path.id}"`), keyOf) }); err != nil {
		t.Fatalf("the second registration of a route: %v", err)
	}
	if err := lockfiber.CheckRoutes(app); err != nil {
		t.Fatal(err)
	}
}

// TestCheckRoutesServes: a checked app starts (Fiber adds the HEAD twin
// of each GET route then, through the same hook) and serves as before.
func TestCheckRoutesServes(t *testing.T) {
	lk := lockertest.NewLocker(t, redistest.Start(t))
	app := newApp()
	_ = lockfiber.CheckRoutes(app)
	app.Get("/items/:id", lockfiber.Lock(lk, `key:"item:{path.id}"`), keyOf)
	base := serve(t, app)
	if code, body := get(t, http.MethodGet, base+"/items/7"); code != http.StatusOK || body != "item:7" {
		t.Fatalf("GET: %d %q", code, body)
	}
	if code, _ := get(t, http.MethodHead, base+"/items/7"); code != http.StatusOK {
		t.Fatalf("HEAD: %d", code)
	}
}
