package lockecho

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockecho/internal/httpcore"
)

// Idempotency returns a middleware that runs the rest of the chain at most
// once per (route, caller scope, Idempotency-Key) and replays the stored
// response to retries:
//
//	e.POST("/payments", pay, lockecho.Idempotency(lk, guard.WithScope(accountOf)))
//
// accountOf is a func(echo.Context) (string, error). Install it on the route, a
// group or e.Use (never e.Pre), before Lock; a handler's error is answered
// inside the guard, and that answer is stored. It panics for an invalid option
// or no scope. Statuses: docs/idempotency.md; placement: docs/echo.md.
func Idempotency(l *locker.Locker, opts ...Option) echo.MiddlewareFunc {
	mw, err := NewIdempotency(l, opts...)
	if err != nil {
		panic(err)
	}
	return mw
}

// NewIdempotency is like Idempotency but returns construction errors:
// guard.ErrNilLocker, guard.ErrNoScope, or errors wrapping
// locker.ErrBadOption.
func NewIdempotency(l *locker.Locker, opts ...Option) (echo.MiddlewareFunc, error) {
	g, s, err := httpcore.NewIdempotency[echo.Context](l, opts, evaluateOptions)
	if err != nil {
		return nil, err
	}
	m := &idempotency{g: g, s: s}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error { return m.serve(c, next) }
	}, nil
}

// idempotency is one built Idempotency middleware.
type idempotency struct {
	g *guard.Idempotency[echo.Context]
	s *settings
}

func (m *idempotency) serve(c echo.Context, next echo.HandlerFunc) error {
	route := c.Path()
	if route == "" {
		return next(c) // no route matched (or e.Pre): nothing to guard
	}
	orig := c.Request()
	q := httpcore.IdemRequest(orig, route, m.s.Header, func(max int64) ([]byte, error) { return httpcore.ReadBody(orig, max) })
	var herr error
	o := m.g.Run(orig.Context(), c, q, func(ctx context.Context) guard.Answer {
		res := c.Response()
		rec := &recorder{ResponseWriter: res.Writer, cap: &httpcore.Capture{Max: m.g.MaxResponseBytes()}}
		res.Writer = rec
		defer func() { res.Writer = rec.ResponseWriter }()
		herr = runChain(c, next, orig, ctx)
		rec.cap.Snapshot(res.Header()) // nothing written: what Echo will send
		return rec.cap.Answer(max(rec.status, http.StatusOK), m.s.ReplayHeaders, rec.status != 0)
	})
	switch o.Kind {
	case guard.OK:
		if o.Err != nil { // the response is sent; a retry may run the handler again
			logAfter(c, m.g.Logger(), o)
		}
	case guard.Replay:
		if err := httpcore.Replay(c.Response(), o.Record); err != nil {
			refuse(c, m.s, guard.Outcome{Kind: guard.Internal, Err: err, Name: o.Name, Idempotency: true})
		}
	default:
		refuse(c, m.s, o)
	}
	return herr
}
