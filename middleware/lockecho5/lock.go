package lockecho5

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockecho5/internal/httpcore"
)

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
		httpcore.LogAfter(contextOf(c), g.Logger(), o)
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
