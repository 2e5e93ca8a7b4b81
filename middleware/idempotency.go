package middleware

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/internal/httpcore"
)

// Idempotency returns a per-route middleware that runs the rest of the
// chain at most once per (route, caller scope, Idempotency-Key) and replays
// the stored response to retries (IETF httpapi draft, Stripe's rules):
//
//	r.POST("/payments", middleware.Idempotency(lk, guard.WithScope(accountOf)), pay)
//
// It panics with NewIdempotency's error if an option is invalid or no
// scope is given. Put it before Lock. Statuses and lifecycle:
// docs/idempotency.md.
func Idempotency(l *locker.Locker, opts ...Option) gin.HandlerFunc {
	return httpcore.Must(NewIdempotency(l, opts...))
}

// handler is the middleware of one Idempotency.
func (m *idempotency) handler() gin.HandlerFunc { return m.serve }

func (m *idempotency) serve(c *gin.Context) {
	route := c.FullPath()
	if route == "" || probeOf(c) != nil {
		return // no route matched, or CheckRoutes: nothing to guard
	}
	orig := c.Request
	q := httpcore.IdemRequest(orig, route, m.s.Header, func(max int64) ([]byte, error) { return readBody(c, max) })
	o := m.g.Run(orig.Context(), c, q, func(ctx context.Context) guard.Answer {
		return m.call(c, orig, ctx)
	})
	switch o.Kind {
	case guard.OK:
		if o.Err != nil {
			_ = c.Error(o.Err) // the response is sent; a retry may run the handler again
		}
	case guard.Replay:
		c.Abort()
		if err := httpcore.Replay(c.Writer, o.Record); err != nil {
			refuse(c, m.s, guard.Outcome{Kind: guard.Internal, Err: err, Name: o.Name, Idempotency: true})
		}
	default:
		refuse(c, m.s, o)
	}
}

// call runs the chain with ctx, capturing the response.
func (m *idempotency) call(c *gin.Context, orig *http.Request, ctx context.Context) guard.Answer {
	cw := &captureWriter{ResponseWriter: c.Writer, cap: &httpcore.Capture{Max: m.g.MaxResponseBytes()}}
	running := orig.WithContext(ctx)
	c.Writer, c.Request = cw, running
	defer func() {
		c.Writer = cw.ResponseWriter
		restore(c, orig, running)
	}()
	c.Next()
	cw.cap.Snapshot(cw.Header()) // nothing written yet: the headers gin is about to send
	return cw.cap.Answer(cw.Status(), m.s.ReplayHeaders, cw.Written())
}
