package lockecho

import (
	"net"

	"github.com/labstack/echo/v4"

	"github.com/locktag/locktag/middleware/lockecho/internal/httpcore"
)

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
