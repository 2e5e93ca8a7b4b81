package middleware

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/internal/httpcore"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
)

// Idempotency returns a per-route middleware that runs the rest of the
// chain at most once per (route, caller scope, Idempotency-Key) and replays
// the stored response to retries, following the IETF httpapi draft "The
// Idempotency-Key HTTP Header Field" and Stripe's rules:
//
//	r.POST("/payments",
//		middleware.Idempotency(lk, guard.WithScope(accountOf)),
//		pay)
//
// It panics with NewIdempotency's error if an option is invalid or no
// scope is given. opts are guard options (guard.WithScope,
// guard.WithRecordTTL, guard.WithReplayWait, ...; see package guard for
// each default) and this package's WithKeyHeader, WithReplayHeaders and
// WithErrorHandler.
//
// Per request, through a guard.Idempotency, before Redis is touched: the
// key header is required (400; guard.WithOptionalKey lets requests
// without it through unguarded) and must be one Structured Field string
// or bare printable ASCII of at most 255 bytes (400); the scope is
// resolved (401); the body is read up to its cap (413) and restored for
// the handler. The fingerprint covers the method, route, path, query and
// body.
//
// Then, atomically in Redis: a new key is marked in flight and the chain
// runs; its response is passed through to the client and stored (status,
// the headers in WithReplayHeaders, body) for the record TTL. A retry gets
// the stored response with "Idempotent-Replayed: true" and the handler
// does not run. A retry while the first request runs gets 409 with
// Retry-After: 1 (or, with guard.WithReplayWait, waits and replays); a
// reuse of the key for a different request gets 422; Redis down gets 503
// (there is no fail-open). If a handler panics, or a Lock after this
// middleware refuses the request, the key is freed so the client can
// retry. Put Idempotency before Lock (docs/idempotency.md).
func Idempotency(l *locker.Locker, opts ...Option) gin.HandlerFunc {
	h, err := NewIdempotency(l, opts...)
	if err != nil {
		panic(err)
	}
	return h
}

// NewIdempotency is like Idempotency but returns construction errors:
// guard.ErrNilLocker, guard.ErrNoScope, or errors wrapping
// guard.ErrBadOption.
func NewIdempotency(l *locker.Locker, opts ...Option) (gin.HandlerFunc, error) {
	gopts, err := guard.AdapterOptions(opts)
	if err != nil {
		return nil, err
	}
	s, err := evaluateOptions(guard.IdempotencyGuards, gopts)
	g, gerr := guard.NewIdempotency[*gin.Context](l, httpcore.RecordFormat, gopts...)
	if err := errors.Join(err, gerr); err != nil {
		if errors.Is(gerr, guard.ErrNilLocker) {
			return nil, guard.ErrNilLocker
		}
		return nil, err
	}
	m := &idempotency{g: g, s: s}
	return m.serve, nil
}

// idempotency is one built Idempotency middleware.
type idempotency struct {
	g *guard.Idempotency[*gin.Context]
	s *settings
}

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
