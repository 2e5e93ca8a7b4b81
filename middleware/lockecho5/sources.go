package lockecho5

import (
	"github.com/labstack/echo/v5"

	"github.com/locktag/locktag/middleware/lockecho5/internal/httpcore"
)

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

// clientIP is c.RealIP(): the Echo instance's IPExtractor if it has one
// (Echo's way of saying which proxies to trust), else the peer address.
func clientIP(c *echo.Context) (string, error) { return c.RealIP(), nil }
