package lockecho

import (
	"net"

	"github.com/labstack/echo/v4"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/middleware/lockecho/internal/httpcore"
)

// getter is the request-time half of a source.
type getter = keyexpr.Getter[echo.Context]

// sourceSet returns the built-in sources with the application's on top.
func (m *locks) sourceSet() keyexpr.Sources[echo.Context] {
	return httpcore.Builtins(httpcore.Reader[echo.Context]{
		Path:   pathGetter,
		Query:  queryGetter,
		Form:   formGetter,
		Header: func(n string) getter { return httpcore.Header(n, echo.Context.Request) },
		Body:   func(path string) getter { return bodyGetter(path, &m.maxBody) },
		Method: func(c echo.Context) (string, error) { return c.Request().Method, nil },
		Route:  func(c echo.Context) (string, error) { return c.Path(), nil },
		IP:     clientIP,
	}, m.s.Sources)
}

// pathGetter reads a route parameter from Echo's router (c.Param),
// decoded: the value every locktag adapter gives for the request. Echo
// v4's router matches URL.RawPath when Go kept one (the path was sent
// spelled otherwise than Go would spell it: x%2Fy, %e6, a "(") and then
// hands the values over as sent, so those are decoded here
// (httpcore.UnescapePath; a '+' stays a plus); else it matched the
// decoded URL.Path and the values are decoded already. A route without
// the parameter is a mistake in the tag (ErrNoRouteParam, a 500), not in
// the request.
func pathGetter(name string) getter {
	return func(c echo.Context) (string, error) {
		names := c.ParamNames()
		for i, n := range names {
			if n == name {
				v := c.ParamValues()[i]
				if v == "" || c.Request().URL.RawPath == "" {
					return v, nil
				}
				return httpcore.UnescapePath(v)
			}
		}
		return "", ErrNoRouteParam
	}
}

func queryGetter(name string) getter {
	return func(c echo.Context) (string, error) { return c.QueryParam(name), nil }
}

// formGetter reads a url-encoded or multipart form value from the body
// only (not the query string, unlike c.FormValue).
func formGetter(name string) getter {
	return func(c echo.Context) (string, error) { return c.Request().PostFormValue(name), nil }
}

// bodyGetter serves {body.a.b}: the JSON field at a.b, read once per
// request, size-capped and restored for the handler (httpcore.ParseBody).
// maxBytes is read per request: it is set once the guards are built.
func bodyGetter(path string, maxBytes *int64) getter {
	segs := httpcore.Segments(path)
	return func(c echo.Context) (string, error) {
		return httpcore.ParseBody(c.Request(), *maxBytes).Field(segs, *maxBytes)
	}
}

// clientIP is c.RealIP() when the Echo instance has an IPExtractor (Echo's
// way of saying which proxies to trust), and otherwise the peer address:
// without one, RealIP believes X-Forwarded-For, which a client can forge.
func clientIP(c echo.Context) (string, error) {
	if e := c.Echo(); e != nil && e.IPExtractor != nil {
		return c.RealIP(), nil
	}
	addr := c.Request().RemoteAddr
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host, nil
	}
	return addr, nil
}

// ContextKeys returns a source, for WithSource, that reads values an earlier
// middleware stored with c.Set:
//
//	lockecho.WithSource("ctx", lockecho.ContextKeys("user", "tenant"))
//
// lets templates use {ctx.user} and {ctx.tenant} (c.Get("user"), ...). With
// names given, any other is a registration error; a name not set, or set to
// "" or nil, is a missing value (400). How values become text:
// docs/keys.md#values-an-earlier-middleware-stored.
func ContextKeys(allowed ...string) keyexpr.Source[echo.Context] {
	return httpcore.ContextKeys("context key", "context key", func(c echo.Context, key string) any { return c.Get(key) }, allowed)
}

// SourceFunc returns a source without a path, for use with WithSource:
//
//	lockecho.WithSource("tenant", lockecho.SourceFunc(tenantOf))
//
// lets templates use {tenant}; get runs once per request. A template that
// gives it a path ({tenant.x}) is a registration error.
func SourceFunc(get func(c echo.Context) (string, error)) keyexpr.Source[echo.Context] {
	return httpcore.SourceFunc(get)
}
