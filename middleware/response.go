package middleware

import (
	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/middleware/internal/httpcore"
)

// captureWriter passes the response through and keeps a copy of it
// (httpcore.Capture) for the idempotency guard.
type captureWriter struct {
	gin.ResponseWriter
	cap *httpcore.Capture
}

func (w *captureWriter) Write(p []byte) (int, error) {
	w.cap.Snapshot(w.ResponseWriter.Header())
	n, err := w.ResponseWriter.Write(p)
	w.cap.Keep(p[:n])
	return n, err
}

func (w *captureWriter) WriteString(s string) (int, error) {
	w.cap.Snapshot(w.ResponseWriter.Header())
	n, err := w.ResponseWriter.WriteString(s)
	w.cap.Keep([]byte(s[:n]))
	return n, err
}

func (w *captureWriter) WriteHeaderNow() {
	w.cap.Snapshot(w.ResponseWriter.Header())
	w.ResponseWriter.WriteHeaderNow()
}
