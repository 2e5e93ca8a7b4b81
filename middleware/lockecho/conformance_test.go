package lockecho_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/labstack/echo/v4"
	echomw "github.com/labstack/echo/v4/middleware"

	"github.com/locktag/locktag/internal/conformance"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockecho"
)

// echoDriver plugs Echo into the transport conformance table: the guards
// are route middleware, the first tag outermost; panics go to Echo's
// Recover middleware (500).
type echoDriver struct{}

func (echoDriver) serve(t testing.TB, h conformance.Handler, mws ...echo.MiddlewareFunc) conformance.Client {
	e := newEcho()
	e.Use(echomw.Recover())
	handler := func(c echo.Context) error {
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
	e.HideBanner, e.HidePort = true, true
	e.Logger.SetOutput(io.Discard)
	return e
}

func (d echoDriver) Lock(t testing.TB, lk *locker.Locker, tag string, h conformance.Handler) conformance.Client {
	return d.Chain(t, lk, []string{tag}, h)
}

func (d echoDriver) Chain(t testing.TB, lk *locker.Locker, tags []string, h conformance.Handler) conformance.Client {
	mws := make([]echo.MiddlewareFunc, len(tags))
	for i, tag := range tags {
		mw, err := lockecho.NewLock(lk, fmt.Sprintf(tag, "{query."+conformance.HTTPKeyParam+"}"))
		if err != nil {
			t.Fatal(err)
		}
		mws[i] = mw
	}
	return d.serve(t, h, mws...)
}

func (d echoDriver) Idempotency(t testing.TB, lk *locker.Locker, h conformance.Handler) conformance.Client {
	mw, err := lockecho.NewIdempotency(lk, guard.WithScope(func(c echo.Context) (string, error) {
		return c.Request().Header.Get(conformance.HTTPScopeHeader), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return d.serve(t, h, mw)
}

// PathRouters: Echo v4's one router, which matches URL.RawPath when it is
// set and hands the values over as matched (undecoded).
func (echoDriver) PathRouters() []conformance.PathRouter {
	return []conformance.PathRouter{{Name: "default", Lock: func(t testing.TB, lk *locker.Locker, tag string, h conformance.Handler) conformance.Client {
		mw, err := lockecho.NewLock(lk, fmt.Sprintf(tag, "{path."+conformance.HTTPPathParam+"}"))
		if err != nil {
			t.Fatal(err)
		}
		e := newEcho()
		e.GET(conformance.HTTPPathPrefix+":"+conformance.HTTPPathParam, func(c echo.Context) error {
			conformance.WriteReply(c.Response(), c.Request(), h)
			return nil
		}, mw)
		return conformance.ServeHTTPPath(t, e)
	}}}
}

func TestConformance(t *testing.T) { conformance.Run(t, echoDriver{}) }
