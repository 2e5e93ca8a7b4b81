package middleware

import (
	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/internal/httpcore"
)

// ProblemContentType is the media type of the bodies WriteProblem writes.
const ProblemContentType = httpcore.ProblemContentType

// Status returns the HTTP status this package answers an outcome of kind
// k with; 200 for the kinds in which the handler ran or a response is
// replayed:
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

// refuse aborts the chain, attaches the cause and hands the outcome to the
// error handler.
func refuse(c *gin.Context, s *settings, o guard.Outcome) {
	if o.Err != nil {
		_ = c.Error(o.Err)
	}
	c.Abort()
	httpcore.SetRefusalHeaders(c.Writer.Header(), o)
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
func WriteProblem(c *gin.Context, o guard.Outcome, status int) {
	c.Data(status, ProblemContentType, httpcore.Problem(o, status))
}
