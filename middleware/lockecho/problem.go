package lockecho

import (
	"log/slog"

	"github.com/labstack/echo/v4"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/lockecho/internal/httpcore"
)

// ProblemContentType is the media type of the bodies WriteProblem writes.
const ProblemContentType = httpcore.ProblemContentType

// Status returns the HTTP status this package answers an outcome of kind
// k with; 200 for the kinds in which the handler ran or a response is
// replayed. It is the Gin adapter's table:
//
//	BadKey, MissingIdempotencyKey, BadIdempotencyKey   400
//	NoScope                                            401
//	Busy, InFlight                                     409 + Retry-After
//	TooLarge                                           413
//	LimitFull                                          429 + Retry-After
//	RateLimited                                        429 + Retry-After, RateLimit-Policy, RateLimit
//	Mismatch, NotStored                                422
//	TagMistake, Internal                               500
//	Unavailable, Deadline, Canceled, Lost              503 + Retry-After
func Status(k guard.Kind) int { return httpcore.Status(k) }

// refuse sets Retry-After (and a rate tag's RateLimit fields) and hands
// the outcome to the error handler.
func refuse(c echo.Context, s *settings, o guard.Outcome) {
	httpcore.SetRefusalHeaders(c.Response().Header(), o)
	s.ErrorHandler(c, o, Status(o.Kind))
}

// WriteProblem is the default ErrorHandler. It writes status with an RFC
// 9457 application/problem+json body whose type names the outcome
// (docs/problems.md for the list):
//
//	{"type":"https://github.com/locktag/locktag/blob/main/docs/problems.md#lock-busy",
//	 "title":"Resource is locked","status":409,"detail":"another request holds the lock; retry later"}
//
// The detail names at most the template placeholder concerned; it never
// contains request values, keys or anything about Redis.
func WriteProblem(c echo.Context, o guard.Outcome, status int) {
	_ = c.Blob(status, ProblemContentType, httpcore.Problem(o, status))
}

// logAfter logs an error the client cannot be told of: the handler ran
// and answered, and then the release failed, or the lock was lost.
func logAfter(c echo.Context, l *slog.Logger, o guard.Outcome) {
	l.WarnContext(c.Request().Context(), "locktag: error after the handler answered", "name", o.Name, "outcome", o.Kind.String(), "error", o.Err)
}
