package middleware

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/internal/httpcore"
)

// Lock returns a per-route middleware that holds the lock described by tag
// while the rest of the chain runs:
//
//	r.POST("/orders/:id/pay", middleware.Lock(lk, `key:"order:{path.id}" wait:"2s"`), pay)
//
// A rate tag makes it a rate limit on the key instead (429 when refused).
// Lock panics with NewLock's error if the tag or an option is invalid: it is
// meant for tags written in code at registration. The handler never runs
// without the lock (unless guard.WithFailOpen); a lost lock cancels the
// request's context with cause locker.ErrLockLost. Statuses: docs/problems.md.
func Lock(l *locker.Locker, tag string, opts ...Option) gin.HandlerFunc {
	h, err := NewLock(l, tag, opts...)
	if err != nil {
		panic(err)
	}
	return h
}

// NewLock is like Lock but returns construction errors instead of panicking:
// guard.ErrNilLocker, errors wrapping locker.ErrBadOption, or a
// *keyexpr.TagError for a bad tag — including a key template that names an
// unknown source or a path its source rejects (errors.Is(err,
// keyexpr.ErrUnknownSource)).
func NewLock(l *locker.Locker, tag string, opts ...Option) (gin.HandlerFunc, error) {
	m, err := newLocks(l, opts)
	if err != nil {
		return nil, err
	}
	g, err := m.compile(tag)
	if err != nil {
		return nil, err
	}
	return func(c *gin.Context) {
		if p := probeOf(c); p != nil {
			p.check(c, m, g.Spec()) // CheckRoutes
			return
		}
		m.serve(c, g)
	}, nil
}

// FailedOpen returns the error for which a guard.WithFailOpen route ran
// its handler without the lock, or nil if the request holds its lock (or
// has no lock middleware). Handlers that must not run unprotected after all
// can check it and refuse. It is guard.FailOpenCause of the request's
// context.
func FailedOpen(c *gin.Context) error {
	return guard.FailOpenCause(c.Request.Context())
}

// locks is what one Lock or LockRules call built: the locker, the options
// and the bound sources, shared by all its routes.
type locks struct {
	l       *locker.Locker
	opts    []guard.Option
	s       *settings
	sources keyexpr.Sources[*gin.Context]
	maxBody int64 // the guards' WithMaxRequestBytes, set before any request
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
func (m *locks) compile(tag string) (*guard.Lock[*gin.Context], error) {
	g, err := guard.CompileLock(m.l, tag, m.sources, m.opts...)
	if err != nil {
		return nil, err
	}
	m.maxBody = g.MaxRequestBytes()
	return g, nil
}

// errNotWritten tells the guard that the chain wrote nothing.
var errNotWritten = errors.New("middleware: nothing written")

// serve runs one request through g.
func (m *locks) serve(c *gin.Context, g *guard.Lock[*gin.Context]) {
	orig := c.Request
	o := g.Run(orig.Context(), c, httpcore.RouteName(orig.Method, c.FullPath()), func(ctx context.Context) error {
		if q := guard.QuotaFromContext(ctx); q != nil && g.Spec().Rate.N > 0 {
			httpcore.SetRateLimit(c.Writer.Header(), q, 0) // this guard's admission, before the handler writes
		}
		locked := orig.WithContext(ctx)
		c.Request = locked
		defer restore(c, orig, locked)
		c.Next()
		if !c.Writer.Written() {
			return errNotWritten
		}
		if s := c.Writer.Status(); s < 200 || s > 299 {
			return guard.ErrUnsuccessful // a keep tag keeps the lock after 2xx only
		}
		return nil
	})
	switch {
	case o.Kind == guard.FailedOpen || o.Kind == guard.OK:
		if o.Err != nil {
			_ = c.Error(o.Err)
		}
	case o.Kind == guard.Lost && c.Writer.Written():
		_ = c.Error(o.Err) // too late to say so to the client
	default:
		refuse(c, m.s, o)
	}
}

// restore gives the chain back the request it had before a guard replaced
// it with running; a handler may have replaced it again meanwhile.
func restore(c *gin.Context, orig, running *http.Request) {
	if c.Request == running {
		c.Request = orig
	} else if c.Request != nil {
		c.Request = c.Request.WithContext(orig.Context())
	}
}
