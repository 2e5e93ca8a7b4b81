package lockecho5

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockecho5/internal/httpcore"
)

// Lock returns a middleware that holds the lock described by tag while the
// rest of the chain runs; a rate tag makes it a rate limit (429). Put it on
// the route, a group or e.Use, never e.Pre (there is no route yet):
//
//	e.POST("/orders/:id/pay", pay, lockecho5.Lock(lk, `key:"order:{path.id}" wait:"2s"`))
//
// A lost lock cancels the request's context with cause locker.ErrLockLost; a
// handler's error goes to Echo's HTTPErrorHandler while the lock is held. Lock
// panics with NewLock's error for an invalid tag or option. Statuses: Status;
// guide: docs/echo.md.
func Lock(l *locker.Locker, tag string, opts ...Option) echo.MiddlewareFunc {
	mw, err := NewLock(l, tag, opts...)
	if err != nil {
		panic(err)
	}
	return mw
}

// NewLock is like Lock but returns construction errors instead of panicking:
// guard.ErrNilLocker, errors wrapping locker.ErrBadOption, or a
// *keyexpr.TagError for a bad tag — including a key template that names an
// unknown source or a path its source rejects (errors.Is(err,
// keyexpr.ErrUnknownSource)).
func NewLock(l *locker.Locker, tag string, opts ...Option) (echo.MiddlewareFunc, error) {
	m, err := newLocks(l, opts)
	if err != nil {
		return nil, err
	}
	g, err := m.compile(tag)
	if err != nil {
		return nil, err
	}
	return m.middleware(g), nil
}

// middleware is the middleware of one Lock. RouteCheck recognises it by
// its code (lockMiddleware): it must not be inlined, which would give each
// caller a copy of the closure.
//
//go:noinline
func (m *locks) middleware(g *guard.Lock[*echo.Context]) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c *echo.Context) error {
			if p := probeOf(c); p != nil {
				p.found = append(p.found, probed{m, g.Spec()}) // RouteCheck: report the tag, run nothing
				return nil
			}
			return m.serve(c, next, g)
		}
	}
}

// FailedOpen returns the error for which a guard.WithFailOpen route ran
// its handler without the lock, or nil if the request holds its lock (or
// has no lock middleware). Handlers that must not run unprotected after all
// can check it and refuse. It is guard.FailOpenCause of the request's
// context.
func FailedOpen(c *echo.Context) error {
	return guard.FailOpenCause(c.Request().Context())
}

// locks is what one Lock or LockRules call built: the locker, the options
// and the bound sources, shared by all its routes.
type locks struct {
	l       *locker.Locker
	opts    []guard.Option
	s       *settings
	sources keyexpr.Sources[*echo.Context]
	maxBody int64 // the guards' WithMaxRequestBytes, set before any request
	// missing knows the routes that only answer 404 (see notFound).
	missing notFound
}

func newLocks(l *locker.Locker, opts []Option) (*locks, error) {
	if l == nil {
		return nil, guard.ErrNilLocker
	}
	s, err := evaluateOptions(guard.LockGuards, opts)
	if err != nil {
		return nil, err
	}
	m := &locks{l: l, opts: opts, s: s, maxBody: guard.DefaultMaxRequestBytes}
	m.sources = m.sourceSet()
	return m, nil
}

// compile parses and binds one tag.
func (m *locks) compile(tag string) (*guard.Lock[*echo.Context], error) {
	g, err := guard.CompileLock(m.l, tag, m.sources, m.opts...)
	if err != nil {
		return nil, err
	}
	m.maxBody = g.MaxRequestBytes()
	return g, nil
}

// errNotWritten tells the guard that the chain wrote nothing.
var errNotWritten = errors.New("lockecho5: nothing written")

// serve runs one request through g.
func (m *locks) serve(c *echo.Context, next echo.HandlerFunc, g *guard.Lock[*echo.Context]) error {
	if m.missing.of(c) {
		return next(c) // no route matched: the 404, unlocked
	}
	orig := c.Request()
	rec, unrecord := record(c, nil)
	var herr error
	o := g.Run(orig.Context(), c, httpcore.RouteName(orig.Method, c.Path()), func(ctx context.Context) error {
		if q := guard.QuotaFromContext(ctx); q != nil && g.Spec().Rate.N > 0 {
			httpcore.SetRateLimit(rec.Header(), q, 0) // this guard's admission, before the handler writes
		}
		herr = runChain(c, next, orig, ctx, rec)
		s := rec.written()
		if s == 0 {
			return errNotWritten
		}
		if s < 200 || s > 299 {
			return guard.ErrUnsuccessful // a keep tag keeps the lock after 2xx only
		}
		return nil
	})
	unrecord()
	switch {
	case !o.Kind.Ran() && (o.Kind != guard.Lost || rec.written() == 0):
		refuse(c, m.s, o)
	case o.Err != nil && o.Kind != guard.FailedOpen: // the guard logs those once per outage
		logAfter(c, g.Logger(), o)
	}
	return herr
}

// runChain runs the rest of the chain with ctx as the request's context;
// rec is the response's recorder. An error it returns is answered by
// Echo's HTTPErrorHandler at once,
// while the lock (or claim) is held — Echo would otherwise answer it
// after every middleware had returned — unless the lock was lost, which
// the guard answers (503). It is returned for the middleware outside,
// which Echo's default error handler then leaves alone (the response is
// committed).
func runChain(c *echo.Context, next echo.HandlerFunc, orig *http.Request, ctx context.Context, rec *recorder) error {
	running := orig.WithContext(ctx)
	c.SetRequest(running)
	defer restore(c, orig, running)
	err := next(c)
	if err != nil && rec.written() == 0 && !errors.Is(context.Cause(ctx), locker.ErrLockLost) {
		c.Echo().HTTPErrorHandler(c, err)
	}
	return err
}

// restore gives the chain back the request it had before a guard replaced
// it with running; a handler may have replaced it again meanwhile.
func restore(c *echo.Context, orig, running *http.Request) {
	if r := c.Request(); r == running {
		c.SetRequest(orig)
	} else if r != nil {
		c.SetRequest(r.WithContext(orig.Context()))
	}
}
