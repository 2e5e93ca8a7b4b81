package lockecho5

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockecho5/internal/httpcore"
)

// call runs the rest of the chain with ctx, capturing the response
// through a recorder, and returns the guard's answer and the chain's
// error.
func (m *idempotency) call(c *echo.Context, next echo.HandlerFunc, orig *http.Request, ctx context.Context) (guard.Answer, error) {
	rec, unrecord := record(c, &httpcore.Capture{Max: m.g.MaxResponseBytes()})
	defer unrecord()
	err := runChain(c, next, orig, ctx, rec)
	rec.Cap.Snapshot(rec.Header()) // nothing written: what Echo will send
	return rec.Cap.Answer(max(rec.written(), http.StatusOK), m.s.ReplayHeaders, rec.written() != 0), err
}
