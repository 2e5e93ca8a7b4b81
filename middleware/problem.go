package middleware

import (
	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/internal/httpcore"
)

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
