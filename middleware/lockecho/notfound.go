package lockecho

import "github.com/labstack/echo/v4"

// routedToNotFound reports whether Echo routed c, a request for method on
// path, to a route-not-found handler: a route of its path was added with
// echo.RouteNotFound and none with the request's method.
func routedToNotFound(c echo.Context, method, path string) bool {
	found, routed := false, false
	for _, r := range c.Echo().Routes() {
		if r.Path != path {
			continue
		}
		switch r.Method {
		case echo.RouteNotFound:
			found = true
		case method:
			routed = true
		}
	}
	return found && !routed
}
