package lockecho5

import "github.com/labstack/echo/v5"

// routedToNotFound reports whether Echo routed c to a route-not-found
// handler.
func routedToNotFound(c *echo.Context, _, _ string) bool {
	return c.RouteInfo().Method == echo.RouteNotFound
}
