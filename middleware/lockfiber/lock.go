package lockfiber

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/gofiber/fiber/v3"

	"github.com/locktag/locktag/keyexpr"
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
	h, err := NewLock(l, tag, opts...)
	if err != nil {
		panic(err)
	}
	return h
}

// NewLock is like Lock but returns construction errors instead of
// panicking: guard.ErrNilLocker, errors wrapping locker.ErrBadOption, or a
// *keyexpr.TagError for a bad tag — including a key template that names an
// unknown source or a path its source rejects (errors.Is(err,
// keyexpr.ErrUnknownSource)). Nothing touches Redis.
func NewLock(l *locker.Locker, tag string, opts ...Option) (fiber.Handler, error) {
	m, err := newLocks(l, opts)
	if err != nil {
		return nil, err
	}
	g, err := guard.CompileLock(l, tag, m.sources, m.opts...)
	if err != nil {
		return nil, err
	}
	m.maxBody = g.MaxRequestBytes()
	h := &lockHandler{m: m, g: g}
	return h.serve, nil
}

// FailedOpen returns the error for which a guard.WithFailOpen lock ran the
// handler without the lock, or nil if the request holds its lock (or has
// no lock handler). Handlers that must not run unprotected after all can
// check it and refuse. It is guard.FailOpenCause of c.Context().
func FailedOpen(c fiber.Ctx) error { return guard.FailOpenCause(c.Context()) }

// locks is what one NewLock call built besides the guard: the options and
// the bound sources.
type locks struct {
	opts    []guard.Option
	s       *settings
	sources keyexpr.Sources[fiber.Ctx]
	maxBody int64 // the guard's WithMaxRequestBytes, set before any request
}

func newLocks(l *locker.Locker, opts []Option) (*locks, error) {
	if l == nil {
		return nil, guard.ErrNilLocker
	}
	s, err := evaluateOptions(guard.LockGuards, opts)
	if err != nil {
		return nil, err
	}
	m := &locks{opts: opts, s: s, maxBody: guard.DefaultMaxRequestBytes}
	m.sources = m.sourceSet()
	return m, nil
}

// lockHandler is one Lock; its serve method is the fiber.Handler, which
// CheckRoutes recognises by its code pointer.
type lockHandler struct {
	m *locks
	g *guard.Lock[fiber.Ctx]
}

// errNotWritten tells the guard that the route answered nothing.
var errNotWritten = errors.New("lockfiber: nothing written")

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
			logAfter(c, g.Logger(), o)
		}
		return next
	case o.Kind == guard.Lost && next == nil && written(c):
		logAfter(c, g.Logger(), o) // the route answered before the loss was seen
		return nil
	}
	return refuse(c, h.m.s, o)
}

// logAfter logs an error the client is not told of: the route answered,
// and then the release failed, or the lock was lost. The Gin adapter puts
// the same errors in c.Errors.
func logAfter(c fiber.Ctx, l *slog.Logger, o guard.Outcome) {
	l.WarnContext(c.Context(), "locktag: error after the handler answered", "name", o.Name, "outcome", o.Kind.String(), "error", o.Err)
}
