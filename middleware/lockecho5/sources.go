package lockecho5

import (
	"github.com/labstack/echo/v5"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/middleware/lockecho5/internal/httpcore"
)

// getter is the request-time half of a source.
type getter = keyexpr.Getter[*echo.Context]

// sourceSet returns the built-in sources with the application's on top.
func (m *locks) sourceSet() keyexpr.Sources[*echo.Context] {
	return httpcore.Builtins(httpcore.Reader[*echo.Context]{
		Path:   pathGetter,
		Query:  queryGetter,
		Form:   formGetter,
		Header: func(n string) getter { return httpcore.Header(n, (*echo.Context).Request) },
		Body:   func(path string) getter { return bodyGetter(path, &m.maxBody) },
		Method: func(c *echo.Context) (string, error) { return c.Request().Method, nil },
		Route:  func(c *echo.Context) (string, error) { return c.Path(), nil },
		IP:     clientIP,
	}, m.s.Sources)
}

// pathGetter reads a route parameter from Echo's router (c.Param),
// decoded: the value every locktag adapter gives for the request,
// whatever the router's UnescapePathParamValues and
// UseEscapedPathForMatching — "x/y+z" for /k/x%2Fy+z. The default router
// matches URL.RawPath when Go kept one and hands the values over as sent;
// its settings cannot be read from a request, so httpcore.PathParam tells
// from the request path and the route how the router read it. A route
// without the parameter is a mistake in the tag (ErrNoRouteParam, a 500),
// not in the request.
func pathGetter(name string) getter {
	return func(c *echo.Context) (string, error) {
		pvs := c.PathValues()
		for _, pv := range pvs {
			if pv.Name == name {
				return httpcore.PathParam(httpcore.EchoSyntax, c.Request().URL, c.Path(), name, pv.Value, func(n string) string { return pvs.GetOr(n, "") })
			}
		}
		return "", ErrNoRouteParam
	}
}

func queryGetter(name string) getter {
	return func(c *echo.Context) (string, error) { return c.QueryParam(name), nil }
}

// formGetter reads a url-encoded or multipart form value from the body
// only (not the query string, unlike c.FormValue).
func formGetter(name string) getter {
	return func(c *echo.Context) (string, error) { return c.Request().PostFormValue(name), nil }
}

// bodyGetter serves {body.a.b}: the JSON field at a.b, read once per
// request, size-capped and restored for the handler (httpcore.ParseBody).
// maxBytes is read per request: it is set once the guards are built.
func bodyGetter(path string, maxBytes *int64) getter {
	segs := httpcore.Segments(path)
	return func(c *echo.Context) (string, error) {
		return httpcore.ParseBody(c.Request(), *maxBytes).Field(segs, *maxBytes)
	}
}

// clientIP is c.RealIP(): the Echo instance's IPExtractor if it has one
// (Echo's way of saying which proxies to trust), else the peer address.
func clientIP(c *echo.Context) (string, error) { return c.RealIP(), nil }

// ContextKeys returns a source, for WithSource, that reads values an earlier
// middleware stored with c.Set:
//
//	lockecho5.WithSource("ctx", lockecho5.ContextKeys("user", "tenant"))
//
// lets templates use {ctx.user} and {ctx.tenant} (c.Get("user"), ...). With
// names given, any other is a registration error; a name not set, or set to
// "" or nil, is a missing value (400). How values become text:
// docs/keys.md#values-an-earlier-middleware-stored.
func ContextKeys(allowed ...string) keyexpr.Source[*echo.Context] {
	return httpcore.ContextKeys("context key", "context key", func(c *echo.Context, key string) any { return c.Get(key) }, allowed)
}

// SourceFunc returns a source without a path, for use with WithSource:
//
//	lockecho5.WithSource("tenant", lockecho5.SourceFunc(tenantOf))
//
// lets templates use {tenant}; get runs once per request. A template that
// gives it a path ({tenant.x}) is a registration error.
func SourceFunc(get func(c *echo.Context) (string, error)) keyexpr.Source[*echo.Context] {
	return httpcore.SourceFunc(get)
}
