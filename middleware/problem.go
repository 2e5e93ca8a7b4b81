package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
)

// ProblemContentType is the media type of the bodies WriteProblem writes.
const ProblemContentType = "application/problem+json"

// problemBase prefixes the problem type URIs: each names a section of the
// Gin guide that explains the problem.
const problemBase = "https://github.com/locktag/locktag/blob/main/docs/gin.md#"

// problem is an RFC 9457 problem details object.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// WriteProblem is the default ErrorHandler. It writes status with an RFC 9457
// application/problem+json body of the form
//
//	{"type":"https://github.com/locktag/locktag/blob/main/docs/gin.md#lock-busy",
//	 "title":"Resource is locked","status":409,
//	 "detail":"another request holds the lock; retry later"}
//
// The type names the outcome (bad-lock-key, body-too-large, lock-busy,
// lock-wait-ended, lock-unavailable, lock-lost). The detail names at most the
// template placeholder concerned (e.g. {path.id}); it never contains request
// values, the resolved key or anything about Redis.
func WriteProblem(c *gin.Context, err error, status int) {
	p := problemFor(err, status)
	b, _ := json.Marshal(p) // cannot fail: strings and an int
	c.Data(status, ProblemContentType, b)
}

func problemFor(err error, status int) problem {
	p := problem{Status: status}
	var te *keyexpr.TemplateError
	switch {
	case errors.Is(err, ErrBodyTooLarge):
		p.Type, p.Title = "body-too-large", "Request body too large"
		p.Detail = "the request body is larger than this route reads to find its lock key"
	case errors.As(err, &te):
		p.Type, p.Title = "bad-lock-key", "Invalid lock key value"
		p.Detail = keyDetail(te)
	case errors.Is(err, locker.ErrLockLost):
		p.Type, p.Title = "lock-lost", "Lock lost"
		p.Detail = "the lock was lost while the request was being processed; its outcome is unknown"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		p.Type, p.Title = "lock-wait-ended", "Lock wait ended"
		p.Detail = "the request's deadline passed or it was cancelled while waiting for the lock"
	case errors.Is(err, locker.ErrNotObtained):
		p.Type, p.Title = "lock-busy", "Resource is locked"
		p.Detail = "another request holds the lock; retry later"
	case errors.Is(err, locker.ErrUnavailable):
		p.Type, p.Title = "lock-unavailable", "Lock service unavailable"
		p.Detail = "the lock service cannot be reached; retry later"
	default:
		p.Type, p.Title = "", http.StatusText(status)
	}
	if p.Type == "" {
		p.Type = "about:blank"
	} else {
		p.Type = problemBase + p.Type
	}
	return p
}

// keyDetail says what is wrong with a request value without repeating it.
func keyDetail(te *keyexpr.TemplateError) string {
	ph := te.Placeholder
	switch {
	case errors.Is(te, keyexpr.ErrMissingValue):
		return "missing value for " + ph
	case errors.Is(te, keyexpr.ErrValueTooLong):
		return "the value for " + ph + " is too long"
	case errors.Is(te, ErrBodyNotJSON):
		return "the request body is not valid JSON (needed for " + ph + ")"
	case errors.Is(te, ErrBodyNotScalar):
		return "the body field for " + ph + " is not a string, number or boolean"
	default:
		return "invalid value for " + ph
	}
}

// keyStatus is the status for an error from resolving the key.
func keyStatus(err error) int {
	if errors.Is(err, ErrBodyTooLarge) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// obtainStatus is the status for an error from Locker.Obtain. The caller's
// own deadline or cancellation is 503, not 504: the server gave up on its own
// account, as http.TimeoutHandler answers, rather than after an upstream.
func obtainStatus(err error) int {
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return http.StatusServiceUnavailable
	case errors.Is(err, locker.ErrLockLost):
		return http.StatusServiceUnavailable // a nested lock whose outer hold was lost
	case errors.Is(err, locker.ErrNotObtained):
		return http.StatusConflict
	case errors.Is(err, locker.ErrUnavailable):
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}
