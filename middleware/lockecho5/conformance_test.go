package lockecho5_test

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/labstack/echo/v5"
	echomw "github.com/labstack/echo/v5/middleware"

	"github.com/locktag/locktag/internal/conformance"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockecho5"
)

// echoDriver plugs Echo into the transport conformance table: the guards
// are route middleware, the first tag outermost; panics go to Echo's
// Recover middleware (500).
type echoDriver struct{}

func (echoDriver) serve(t testing.TB, h conformance.Handler, mws ...echo.MiddlewareFunc) conformance.Client {
	e := newEcho()
	e.Use(echomw.Recover())
	handler := func(c *echo.Context) error {
		conformance.WriteReply(c.Response(), c.Request(), h)
		return nil
	}
	e.GET("/", handler, mws...)
	e.POST("/", handler, mws...)
	return conformance.ServeHTTP(t, e)
}

// newEcho is an Echo instance that logs nothing.
func newEcho() *echo.Echo {
	e := echo.New()
	e.Logger = slog.New(slog.DiscardHandler)
	return e
}

func (d echoDriver) Lock(t testing.TB, lk *locker.Locker, tag string, h conformance.Handler) conformance.Client {
	return d.Chain(t, lk, []string{tag}, h)
}

func (d echoDriver) Chain(t testing.TB, lk *locker.Locker, tags []string, h conformance.Handler) conformance.Client {
	mws := make([]echo.MiddlewareFunc, len(tags))
	for i, tag := range tags {
		mw, err := lockecho5.NewLock(lk, fmt.Sprintf(tag, "{query."+conformance.HTTPKeyParam+"}"))
		if err != nil {
			t.Fatal(err)
		}
		mws[i] = mw
	}
	return d.serve(t, h, mws...)
}

func (d echoDriver) Idempotency(t testing.TB, lk *locker.Locker, h conformance.Handler) conformance.Client {
	mw, err := lockecho5.NewIdempotency(lk, guard.WithScope(func(c *echo.Context) (string, error) {
		return c.Request().Header.Get(conformance.HTTPScopeHeader), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return d.serve(t, h, mw)
}

// PathRouters: Echo v5's default router (it matches URL.RawPath when it
// is set and hands the values over undecoded), with
// UnescapePathParamValues (decoded), and with UseEscapedPathForMatching
// (it matches the decoded URL.Path; an encoded slash is a slash there,
// but a route's last parameter takes the rest of the path, so /k/:id
// still matches x%2Fy).
func (echoDriver) PathRouters() []conformance.PathRouter {
	router := func(name string, noSlash bool, cfg echo.RouterConfig) conformance.PathRouter {
		return conformance.PathRouter{Name: name, NoEncodedSlash: noSlash, Lock: func(t testing.TB, lk *locker.Locker, tag string, h conformance.Handler) conformance.Client {
			mw, err := lockecho5.NewLock(lk, fmt.Sprintf(tag, "{path."+conformance.HTTPPathParam+"}"))
			if err != nil {
				t.Fatal(err)
			}
			e := echo.NewWithConfig(echo.Config{Logger: slog.New(slog.DiscardHandler), Router: echo.NewRouter(cfg)})
			e.GET(conformance.HTTPPathPrefix+":"+conformance.HTTPPathParam, func(c *echo.Context) error {
				conformance.WriteReply(c.Response(), c.Request(), h)
				return nil
			}, mw)
			return conformance.ServeHTTPPath(t, e)
		}}
	}
	return []conformance.PathRouter{
		router("default", false, echo.RouterConfig{}),
		router("UnescapePathParamValues", false, echo.RouterConfig{UnescapePathParamValues: true}),
		router("UseEscapedPathForMatching", false, echo.RouterConfig{UseEscapedPathForMatching: true}),
	}
}

func TestConformance(t *testing.T) { conformance.Run(t, echoDriver{}) }
