package middleware_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/internal/conformance"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware"
)

// ginDriver plugs Gin into the transport conformance table; panics go to
// gin's Recovery (500).
type ginDriver struct{}

func (ginDriver) serve(t testing.TB, h conformance.Handler, mws ...gin.HandlerFunc) conformance.Client {
	e := gin.New()
	e.Use(gin.RecoveryWithWriter(io.Discard))
	chain := append(mws, func(c *gin.Context) { conformance.WriteReply(c.Writer, c.Request, h) })
	e.GET("/", chain...)
	e.POST("/", chain...)
	return conformance.ServeHTTP(t, e)
}

func (d ginDriver) Lock(t testing.TB, lk *locker.Locker, tag string, h conformance.Handler) conformance.Client {
	mw, err := middleware.NewLock(lk, fmt.Sprintf(tag, "{query."+conformance.HTTPKeyParam+"}"))
	if err != nil {
		t.Fatal(err)
	}
	return d.serve(t, h, mw)
}

func (d ginDriver) Chain(t testing.TB, lk *locker.Locker, tags []string, h conformance.Handler) conformance.Client {
	mws := make([]gin.HandlerFunc, len(tags))
	for i, tag := range tags {
		mw, err := middleware.NewLock(lk, fmt.Sprintf(tag, "{query."+conformance.HTTPKeyParam+"}"))
		if err != nil {
			t.Fatal(err)
		}
		mws[i] = mw
	}
	return d.serve(t, h, mws...)
}

func (d ginDriver) Idempotency(t testing.TB, lk *locker.Locker, h conformance.Handler) conformance.Client {
	mw, err := middleware.NewIdempotency(lk, guard.WithScope(func(c *gin.Context) (string, error) {
		return c.GetHeader(conformance.HTTPScopeHeader), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return d.serve(t, h, mw)
}

// PathRouters: Gin's default (it matches URL.Path, so an encoded slash
// splits the segment), UseRawPath (it matches URL.RawPath and unescapes
// the values as query values, a plus into a space), and UseRawPath
// without UnescapePathValues (the values as sent).
func (ginDriver) PathRouters() []conformance.PathRouter {
	router := func(name string, noSlash bool, setup func(e *gin.Engine)) conformance.PathRouter {
		return conformance.PathRouter{Name: name, NoEncodedSlash: noSlash, Lock: func(t testing.TB, lk *locker.Locker, tag string, h conformance.Handler) conformance.Client {
			mw, err := middleware.NewLock(lk, fmt.Sprintf(tag, "{path."+conformance.HTTPPathParam+"}"))
			if err != nil {
				t.Fatal(err)
			}
			e := gin.New()
			e.Use(middleware.RouteCheck())
			setup(e)
			e.GET(conformance.HTTPPathPrefix+":"+conformance.HTTPPathParam, mw, func(c *gin.Context) { conformance.WriteReply(c.Writer, c.Request, h) })
			if err := middleware.CheckRoutes(e); err != nil {
				t.Fatal(err)
			}
			return conformance.ServeHTTPPath(t, e)
		}}
	}
	return []conformance.PathRouter{
		router("default", true, func(*gin.Engine) {}),
		router("UseRawPath", false, func(e *gin.Engine) { e.UseRawPath = true }),
		router("UseRawPath-no-UnescapePathValues", false, func(e *gin.Engine) { e.UseRawPath, e.UnescapePathValues = true, false }),
		router("UseRawPath-RemoveExtraSlash", false, func(e *gin.Engine) { e.UseRawPath, e.RemoveExtraSlash = true, true }),
	}
}

func TestConformance(t *testing.T) { conformance.Run(t, ginDriver{}) }
