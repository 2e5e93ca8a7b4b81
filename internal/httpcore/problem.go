package httpcore

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker/guard"
)

// ProblemContentType is the media type of the bodies Problem returns.
const ProblemContentType = "application/problem+json"

// problemBase prefixes the problem type URIs: each names a section of a
// guide that explains the problem.
const (
	lockProblems = "https://github.com/locktag/locktag/blob/main/docs/problems.md#"
	idemProblems = "https://github.com/locktag/locktag/blob/main/docs/idempotency.md#"
)

// problem is an RFC 9457 problem details object.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// Status is the HTTP status of an outcome of kind k (the table is in the
// adapters' Status docs).
func Status(k guard.Kind) int {
	switch k {
	case guard.BadKey, guard.MissingIdempotencyKey, guard.BadIdempotencyKey:
		return http.StatusBadRequest
	case guard.NoScope:
		return http.StatusUnauthorized
	case guard.Busy, guard.InFlight:
		return http.StatusConflict
	case guard.LimitFull, guard.RateLimited:
		return http.StatusTooManyRequests
	case guard.TooLarge:
		return http.StatusRequestEntityTooLarge
	case guard.Mismatch, guard.NotStored:
		return http.StatusUnprocessableEntity
	case guard.Unavailable, guard.Deadline, guard.Canceled, guard.Lost:
		return http.StatusServiceUnavailable
	case guard.OK, guard.FailedOpen, guard.Replay:
		return http.StatusOK
	}
	return http.StatusInternalServerError
}

// SetRetryAfter sets Retry-After to o's retry hint (guard.Outcome.Retry)
// in whole seconds, rounded up, when there is one.
func SetRetryAfter(h http.Header, o guard.Outcome) {
	if d := o.Retry(); d > 0 {
		h.Set("Retry-After", strconv.FormatInt(seconds(d), 10))
	}
}

// SetRefusalHeaders sets what a refusal's answer carries besides its
// body: Retry-After, and for a rate tag's refusal the RateLimit-Policy
// and RateLimit fields (SetRateLimit), whose t agrees with Retry-After.
func SetRefusalHeaders(h http.Header, o guard.Outcome) {
	SetRetryAfter(h, o)
	if o.Quota != nil {
		SetRateLimit(h, o.Quota, o.Retry())
	}
}

// seconds is d in whole seconds, rounded up.
func seconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// Problem returns the RFC 9457 body WriteProblem sends for o with status.
func Problem(o guard.Outcome, status int) []byte {
	p := problem{Status: status}
	base := lockProblems
	if o.Idempotency {
		base = idemProblems
		p.Type, p.Title, p.Detail = idemProblem(o)
	} else {
		p.Type, p.Title, p.Detail = lockProblem(o)
	}
	if p.Type == "" {
		p.Type, p.Title = "about:blank", http.StatusText(status)
	} else {
		p.Type = base + p.Type
	}
	b, _ := json.Marshal(p) // cannot fail: strings and an int
	return b
}

func lockProblem(o guard.Outcome) (kind, title, detail string) {
	switch o.Kind {
	case guard.TooLarge:
		return "body-too-large", "Request body too large", "the request body is larger than this route reads"
	case guard.BadKey:
		return "bad-lock-key", "Invalid lock key value", keyDetail(o.Err)
	case guard.TagMistake:
		return "lock-tag-mistake", "Lock misconfigured", "this route's lock tag cannot be resolved for any request; the server's log names it"
	case guard.Lost:
		return "lock-lost", "Lock lost", "the lock was lost while the request was being processed; its outcome is unknown"
	case guard.Deadline, guard.Canceled:
		return "lock-wait-ended", "Lock wait ended", "the request's deadline passed or it was cancelled while waiting for the lock"
	case guard.Busy:
		return "lock-busy", "Resource is locked", "another request holds the lock; retry later"
	case guard.LimitFull:
		return "limit-full", "Too many concurrent requests", "the concurrency limit of this resource is reached; retry later"
	case guard.RateLimited:
		return "rate-limited", "Rate limit exceeded", "the rate limit of this resource is used up; retry after the time in Retry-After"
	case guard.Unavailable:
		return "lock-unavailable", "Lock service unavailable", "the lock service cannot be reached; retry later"
	}
	return "", "", ""
}

func idemProblem(o guard.Outcome) (kind, title, detail string) {
	switch o.Kind {
	case guard.MissingIdempotencyKey:
		return "idempotency-key-missing", "Idempotency key missing", "this request needs an Idempotency-Key header"
	case guard.BadIdempotencyKey:
		return "idempotency-key-invalid", "Invalid idempotency key", "the Idempotency-Key must be one string of printable ASCII, at most the allowed length"
	case guard.NoScope:
		return "idempotency-scope-unresolved", "Caller unknown", "the caller could not be identified, so its idempotency keys cannot be scoped"
	case guard.Mismatch:
		return "idempotency-key-reused", "Idempotency key reused", "this key was used with a different request; use a new key for a new request"
	case guard.NotStored:
		return "idempotency-response-not-stored", "Response not replayable",
			"the request with this key was processed (status " + strconv.Itoa(o.Record.Status) + ") but its response was too large to store"
	case guard.InFlight:
		return "idempotency-key-in-flight", "Request in progress", "a request with this key is still being processed; retry later"
	case guard.Deadline, guard.Canceled:
		return "idempotency-wait-ended", "Idempotency check ended", "the request's deadline passed or it was cancelled during the idempotency check"
	case guard.Unavailable:
		return "idempotency-unavailable", "Idempotency service unavailable", "the idempotency store cannot be reached; retry later with the same key"
	case guard.Lost:
		return "idempotency-claim-lost", "Idempotency claim lost", "the request's claim on its key was lost while it was processed; its outcome is unknown"
	case guard.TooLarge:
		return lockProblem(o)
	}
	return "", "", ""
}

// keyDetail says what is wrong with a request value without repeating it.
func keyDetail(err error) string {
	var te *keyexpr.TemplateError
	if !errors.As(err, &te) {
		return "invalid lock key value"
	}
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
