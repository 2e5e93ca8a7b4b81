package lockecho5

import (
	"github.com/labstack/echo/v5"

	"github.com/locktag/locktag/middleware/lockecho5/internal/httpcore"
)

// recorder is the context's response writer while a guard runs the chain
// (c.SetResponse; Echo's own Response stays underneath, found through
// Unwrap): it passes the response through, notes its status and, for an
// idempotency guard, keeps a copy (Cap).
type recorder struct{ httpcore.Recorder }

// record makes c's response go through a new recorder until the returned
// function puts the writer back.
func record(c *echo.Context, cap *httpcore.Capture) (*recorder, func()) {
	orig := c.Response()
	rec := &recorder{httpcore.Recorder{ResponseWriter: orig, Cap: cap}}
	c.SetResponse(rec)
	return rec, func() { c.SetResponse(orig) }
}

// written is the response's status once it is written, 0 before: the
// recorder's, or that of Echo's Response underneath when a handler wrote
// to it directly (echo.UnwrapResponse).
func (w *recorder) written() int {
	if w.Status != 0 {
		return w.Status
	}
	if r, err := echo.UnwrapResponse(w.ResponseWriter); err == nil && r.Committed {
		return r.Status
	}
	return 0
}
