package lockecho

import (
	"sync"

	"github.com/labstack/echo/v4"
)

// notFound remembers, per method and route path, whether Echo routed a
// request to a route-not-found handler: a group's catch-all, which Echo
// adds so that group middleware runs for unknown paths under the group, or
// an app's RouteNotFound. No route of the app matched such a request, so
// no lock applies: it goes straight to the 404 (a tag reading a parameter
// the catch-all lacks is no mistake of the tag).
type notFound struct{ m sync.Map } // method+" "+path -> bool

// of reports whether c was routed to a route-not-found handler: a route
// of its path was added with echo.RouteNotFound and none with the
// request's method.
func (n *notFound) of(c echo.Context) bool {
	path, method := c.Path(), c.Request().Method
	if path == "" {
		return false // not routed yet (e.Pre): the guard's tag mistake
	}
	key := method + " " + path
	if v, ok := n.m.Load(key); ok {
		return v.(bool)
	}
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
	v := found && !routed
	n.m.Store(key, v)
	return v
}
