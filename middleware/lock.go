package middleware

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

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
	return httpcore.Must(NewLock(l, tag, opts...))
}

// handler is the middleware of one Lock. CheckRoutes recognises it by the
// name of its code (lockHandlerName): it must not be inlined, which would
// give its closure another name.
//
//go:noinline
func (m *locks) handler(g *guard.Lock[*gin.Context]) gin.HandlerFunc {
	return func(c *gin.Context) {
		if p := probeOf(c); p != nil {
			p.check(c, m, g.Spec()) // CheckRoutes
			return
		}
		m.serve(c, g)
	}
}

// contextOf is the request's context.
func contextOf(c *gin.Context) context.Context { return c.Request.Context() }

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
