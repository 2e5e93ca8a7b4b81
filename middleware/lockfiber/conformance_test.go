package lockfiber_test

import (
	"fmt"
	"testing"

	"github.com/gofiber/fiber/v3"
	"github.com/gofiber/fiber/v3/middleware/recover"

	"github.com/locktag/locktag/internal/conformance"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockfiber"
)

// fiberDriver plugs Fiber into the transport conformance table; panics go
// to Fiber's recover middleware (500).
type fiberDriver struct{}

func (fiberDriver) serve(t testing.TB, h conformance.Handler, hs ...fiber.Handler) conformance.Client {
	app := newApp()
	rest := make([]any, 0, len(hs))
	for _, h := range hs {
		rest = append(rest, h)
	}
	rest = append(rest, reply(h))
	app.Get("/", rest[0], rest[1:]...)
	app.Post("/", rest[0], rest[1:]...)
	if err := lockfiber.CheckRoutes(app); err != nil {
		t.Fatal(err)
	}
	return client(t, serve(t, app))
}

func (d fiberDriver) Lock(t testing.TB, lk *locker.Locker, tag string, h conformance.Handler) conformance.Client {
	return d.Chain(t, lk, []string{tag}, h)
}

func (d fiberDriver) Chain(t testing.TB, lk *locker.Locker, tags []string, h conformance.Handler) conformance.Client {
	hs := make([]fiber.Handler, len(tags))
	for i, tag := range tags {
		mw, err := lockfiber.NewLock(lk, fmt.Sprintf(tag, "{query."+conformance.HTTPKeyParam+"}"))
		if err != nil {
			t.Fatal(err)
		}
		hs[i] = mw
	}
	return d.serve(t, h, hs...)
}

func (d fiberDriver) Idempotency(t testing.TB, lk *locker.Locker, h conformance.Handler) conformance.Client {
	mw, err := lockfiber.NewIdempotency(lk, guard.WithScope(func(c fiber.Ctx) (string, error) {
		return c.Get(conformance.HTTPScopeHeader), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return d.serve(t, h, mw)
}

// PathRouters: Fiber's default (it matches the path as sent and hands
// the values over undecoded) and UnescapePath (it decodes the path, a
// plus into a space, before matching, so an encoded slash splits the
// segment).
func (fiberDriver) PathRouters() []conformance.PathRouter {
	router := func(name string, noSlash bool, cfg fiber.Config) conformance.PathRouter {
		return conformance.PathRouter{Name: name, NoEncodedSlash: noSlash, Lock: func(t testing.TB, lk *locker.Locker, tag string, h conformance.Handler) conformance.Client {
			mw, err := lockfiber.NewLock(lk, fmt.Sprintf(tag, "{path."+conformance.HTTPPathParam+"}"))
			if err != nil {
				t.Fatal(err)
			}
			app := fiber.New(cfg)
			app.Use(recover.New())
			app.Get(conformance.HTTPPathPrefix+":"+conformance.HTTPPathParam, mw, reply(h))
			if err := lockfiber.CheckRoutes(app); err != nil {
				t.Fatal(err)
			}
			return conformance.PathClient(t, serve(t, app))
		}}
	}
	return []conformance.PathRouter{
		router("default", false, fiber.Config{}),
		router("UnescapePath", true, fiber.Config{UnescapePath: true}),
	}
}

func TestConformance(t *testing.T) { conformance.Run(t, fiberDriver{}) }
