package lockecho5

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"github.com/locktag/locktag/middleware/lockecho5/internal/httpcore"
)

// recorder is the context's response writer while a guard runs the chain
// (c.SetResponse; Echo's own Response stays underneath, found through
// Unwrap): it passes the response through, notes its status and, for an
// idempotency guard, keeps a copy (cap).
type recorder struct {
	http.ResponseWriter
	status int
	cap    *httpcore.Capture // nil: not capturing
}

// record makes c's response go through a new recorder until the returned
// function puts the writer back.
func record(c *echo.Context, cap *httpcore.Capture) (*recorder, func()) {
	orig := c.Response()
	rec := &recorder{ResponseWriter: orig, cap: cap}
	c.SetResponse(rec)
	return rec, func() { c.SetResponse(orig) }
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
		if w.cap != nil {
			w.cap.Snapshot(w.Header())
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	if w.cap != nil {
		w.cap.Keep(p[:n])
	}
	return n, err
}

// written is the response's status once it is written, 0 before: the
// recorder's, or that of Echo's Response underneath when a handler wrote
// to it directly (echo.UnwrapResponse).
func (w *recorder) written() int {
	if w.status != 0 {
		return w.status
	}
	if r, err := echo.UnwrapResponse(w.ResponseWriter); err == nil && r.Committed {
		return r.Status
	}
	return 0
}

// Flush lets streaming handlers flush through the recorder.
func (w *recorder) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
