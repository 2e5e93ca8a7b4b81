package stdhttp

import (
	"net/http"

	"github.com/locktag/locktag/middleware/stdhttp/internal/httpcore"
)

// recorder passes a response through, notes its status and, for an
// idempotency guard, keeps a copy (cap).
type recorder struct {
	http.ResponseWriter
	status int
	cap    *httpcore.Capture // nil: not capturing
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

// Flush lets streaming handlers flush through the recorder.
func (w *recorder) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
