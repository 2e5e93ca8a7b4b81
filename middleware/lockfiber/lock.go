package lockfiber

import (
	"context"
	"net/http"

	"github.com/gofiber/fiber/v3"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockfiber/internal/httpcore"
)

// Lock returns a route-level handler that holds the lock described by tag
// while the rest of the route's handlers run:
//
//	app.Post("/orders/:id/pay", lockfiber.Lock(lk, `key:"order:{path.id}" wait:"2s"`), pay)
//
// Register it on the route, not with app.Use (there {path.X} and {route} are
// not the route's); a rate tag, a rate limit on the key, may sit in app.Use.
// The handlers after it run with the lease's context as c.Context(), cancelled
// with cause locker.ErrLockLost if the lock is lost. Lock panics with NewLock's
// error for an invalid tag or option. Statuses: Status; guide: docs/fiber.md.
func Lock(l *locker.Locker, tag string, opts ...Option) fiber.Handler {
	return httpcore.Must(NewLock(l, tag, opts...))
}

// handler is the fiber.Handler of one Lock.
func (m *locks) handler(g *guard.Lock[fiber.Ctx]) fiber.Handler {
	h := &lockHandler{m: m, g: g}
	return h.serve
}

// contextOf is the request's context.
func contextOf(c fiber.Ctx) context.Context { return c.Context() }

// lockHandler is one Lock; its serve method is the fiber.Handler, which
// CheckRoutes recognises by its code pointer.
type lockHandler struct {
	m *locks
	g *guard.Lock[fiber.Ctx]
}

func (h *lockHandler) serve(c fiber.Ctx) error {
	if p, ok := c.Locals(probeKey{}).(*probe); ok {
		p.found = h // CheckRoutes asks which lock this is
		return nil
	}
	g := h.g
	orig := c.Context()
	var next error // what the rest of the route returned
	o := g.Run(orig, c, httpcore.RouteName(c.Method(), c.Route().Path), func(ctx context.Context) error {
		if q := guard.QuotaFromContext(ctx); q != nil && g.Spec().Rate.N > 0 {
			rh := http.Header{}
			httpcore.SetRateLimit(rh, q, 0) // this guard's admission, before the handler writes
			setHeaders(c, rh)
		}
		c.SetContext(ctx)
		defer c.SetContext(orig) // the lease's context ends with the release
		next = c.Next()
		switch s := c.Response().StatusCode(); {
		case next != nil:
			return next // the app's ErrorHandler answers it, after the release
		case !written(c):
			return errNotWritten
		case s < 200 || s > 299:
			return guard.ErrUnsuccessful // a keep tag keeps the lock after 2xx only
		}
		return nil
	})
	switch {
	case o.Kind.Ran():
		if o.Err != nil && o.Kind != guard.FailedOpen { // the guard logs those once per outage
			httpcore.LogAfter(contextOf(c), g.Logger(), o)
		}
		return next
	case o.Kind == guard.Lost && next == nil && written(c):
		httpcore.LogAfter(contextOf(c), g.Logger(), o) // the route answered before the loss was seen
		return nil
	}
	return refuse(c, h.m.s, o)
}
