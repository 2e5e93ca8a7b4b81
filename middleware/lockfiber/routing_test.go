package lockfiber_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v3"

	"github.com/locktag/locktag/internal/lockertest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/middleware/lockfiber"
)

// keyOf answers with the key of the lease the route's handler holds.
func keyOf(c fiber.Ctx) error {
	le := locker.FromContext(c.Context())
	if le == nil {
		return c.Status(fiber.StatusTeapot).SendString("no lease")
	}
	return c.SendString(le.Key())
}

func get(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Path parameters, wildcards and the route template come from Fiber's
// router, on the route the Lock is registered on (also inside a group).
func TestRouteSources(t *testing.T) {
	lk := lockertest.NewLocker(t, redistest.Start(t))
	app := newApp()
	app.Post("/orders/:id/pay", lockfiber.Lock(lk, `key:"order:{path.id}"`), keyOf)
	app.Get("/files/*", lockfiber.Lock(lk, `key:"file:{path.*}"`), keyOf)
	app.Get("/opt/:id?", lockfiber.Lock(lk, `key:"opt:{path.id}"`), keyOf)
	api := app.Group("/api/v1")
	api.Put("/carts/:user", lockfiber.Lock(lk, `key:"{route}:{path.user}"`), keyOf)
	app.Get("/mistake/:id", lockfiber.Lock(lk, `key:"m:{path.order}"`), keyOf)
	base := serve(t, app)

	for _, c := range []struct {
		method, path string
		status       int
		key          string
	}{
		{"POST", "/orders/42/pay", 200, "order:42"},
		{"GET", "/files/a/b.txt", 200, "file:a/b.txt"},
		{"GET", "/opt/7", 200, "opt:7"},
		{"GET", "/opt", 400, ""},                                       // an optional parameter left out: a missing value
		{"PUT", "/api/v1/carts/ann", 200, "/api/v1/carts/%3Auser:ann"}, // the route template, escaped
		{"GET", "/mistake/1", 500, ""},                                 // a tag mistake CheckRoutes reports
	} {
		status, body := get(t, c.method, base+c.path)
		if status != c.status {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, status, body, c.status)
			continue
		}
		if c.key != "" && !strings.Contains(body, c.key) {
			t.Errorf("%s %s: key %q, want one with %q", c.method, c.path, body, c.key)
		}
	}
}

// CheckRoutes fails, naming route and tag, for a {path.X} the route lacks
// and for {route} in a Use handler; it passes correct routes, and runs no
// route handler.
func TestCheckRoutes(t *testing.T) {
	lk := lockertest.NewLocker(t, redistest.Start(t))
	ran := false
	h := func(c fiber.Ctx) error { ran = true; return nil }

	good := fiber.New()
	good.Use(func(c fiber.Ctx) error { ran = true; return c.Next() })
	good.Use(lockfiber.Lock(lk, `key:"ip:{ip}" rate:"10/1s"`))
	good.Post("/orders/:id/pay", lockfiber.Lock(lk, `key:"order:{path.id}"`), h)
	good.Get("/files/*", lockfiber.Lock(lk, `key:"file:{path.*}"`), h)
	good.Get("/plain", h)
	if err := lockfiber.CheckRoutes(good); err != nil {
		t.Fatalf("correct routes: %v", err)
	}
	if ran {
		t.Fatal("CheckRoutes ran a handler that is not a Lock")
	}

	bad := fiber.New()
	bad.Post("/orders/:id/pay", lockfiber.Lock(lk, `key:"order:{path.order}"`), h)
	bad.Use("/api", lockfiber.Lock(lk, `key:"{route}"`))
	err := lockfiber.CheckRoutes(bad)
	if !errors.Is(err, lockfiber.ErrBadRule) {
		t.Fatalf("CheckRoutes = %v, want ErrBadRule", err)
	}
	if _, ok := errors.AsType[*keyexpr.TagError](err); !ok {
		t.Errorf("CheckRoutes = %v, want a *keyexpr.TagError inside", err)
	}
	for _, want := range []string{"POST /orders/:id/pay", "{path.order}", "order:{path.order}", ":id", "/api", "{route}", "Use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("CheckRoutes error does not name %q:\n%v", want, err)
		}
	}
	if ran {
		t.Fatal("CheckRoutes ran a route handler")
	}
}

// Construction errors come at registration, never at request time.
func TestRegistrationErrors(t *testing.T) {
	lk := lockertest.NewLocker(t, redistest.Start(t))
	if _, err := lockfiber.NewLock(nil, `key:"a"`); err == nil {
		t.Error("nil locker: no error")
	}
	if _, err := lockfiber.NewLock(lk, `key:"a:{nosuch.x}"`); !errors.Is(err, keyexpr.ErrUnknownSource) {
		t.Errorf("unknown source: %v", err)
	}
	if _, err := lockfiber.NewIdempotency(lk); err == nil {
		t.Error("idempotency without a scope: no error")
	}
	defer func() {
		if recover() == nil {
			t.Error("Lock with a bad tag did not panic")
		}
	}()
	lockfiber.Lock(lk, `key:"a" expire:"soon"`)
}
