package lockecho

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockecho/internal/httpcore"
)

// call runs the rest of the chain with ctx, capturing the response under
// Echo's Response, and returns the guard's answer and the chain's error.
func (m *idempotency) call(c echo.Context, next echo.HandlerFunc, orig *http.Request, ctx context.Context) (guard.Answer, error) {
	res := c.Response()
	rec := &httpcore.Recorder{ResponseWriter: res.Writer, Cap: &httpcore.Capture{Max: m.g.MaxResponseBytes()}}
	res.Writer = rec
	defer func() { res.Writer = rec.ResponseWriter }()
	err := runChain(c, next, orig, ctx)
	rec.Cap.Snapshot(res.Header()) // nothing written: what Echo will send
	return rec.Cap.Answer(max(rec.Status, http.StatusOK), m.s.ReplayHeaders, rec.Status != 0), err
}
