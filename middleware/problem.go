package middleware

import (
	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/internal/httpcore"
)

// ProblemContentType is the media type of the bodies WriteProblem writes.
const ProblemContentType = httpcore.ProblemContentType

// Status returns the HTTP status this package answers an outcome of kind k
// with, the table of every locktag HTTP adapter: 200 where the handler ran or
// a response is replayed; 400 for BadKey, MissingIdempotencyKey and
// BadIdempotencyKey; 401 NoScope; 409 Busy, InFlight; 413 TooLarge; 422
// Mismatch, NotStored; 429 LimitFull, RateLimited; 500 TagMistake, Internal;
// 503 Unavailable, Deadline, Canceled, Lost. 409, 429 and 503 carry
// Retry-After, RateLimited also the RateLimit fields: docs/problems.md.
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
