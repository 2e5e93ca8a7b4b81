package stdhttp

import (
	"net/http"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/stdhttp/internal/httpcore"
)

// WriteProblem is the default ErrorHandler: status with the RFC 9457
// application/problem+json body the Gin adapter writes.
func WriteProblem(w http.ResponseWriter, _ *http.Request, o guard.Outcome, status int) {
	w.Header().Set("Content-Type", ProblemContentType)
	w.WriteHeader(status)
	_, _ = w.Write(httpcore.Problem(o, status))
}

// refuse sets Retry-After (and a rate tag's RateLimit fields) and hands
// the outcome to the error handler.
func refuse(w http.ResponseWriter, r *http.Request, s *settings, o guard.Outcome) {
	httpcore.SetRefusalHeaders(w.Header(), o)
	s.ErrorHandler(w, r, o, Status(o.Kind))
}
