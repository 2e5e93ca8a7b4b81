package conformance

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/locker"
)

// Status is the transport-neutral class of an outcome, as a client sees it.
type Status uint8

// The classes. Other is anything else: a panic's 500 or a dropped
// connection, a status that does not match the class's code.
const (
	Other       Status = iota
	OK                 // the handler's answer
	Busy               // 409 lock-busy; Aborted LOCK_BUSY
	Unavailable        // 503 *-unavailable; Unavailable
	Invalid            // 400; InvalidArgument
	Lost               // 503 lock-lost; Aborted LOCK_LOST
	InFlight           // 409 idempotency-key-in-flight; Aborted IDEMPOTENCY_KEY_IN_FLIGHT
	Mismatch           // 422 idempotency-key-reused; FailedPrecondition IDEMPOTENCY_KEY_REUSED
	Replay             // the stored answer, marked as replayed
	LimitFull          // 429 limit-full; ResourceExhausted LOCK_LIMIT_FULL
	RateLimited        // 429 rate-limited; ResourceExhausted RATE_LIMITED
	NotFound           // 404, no route; NotFound
)

var statusNames = [...]string{"other", "ok", "busy", "unavailable", "invalid", "lost", "in-flight", "mismatch", "replay", "limit-full", "rate-limited", "not-found"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "status(?)"
}

// Result is one request's outcome.
type Result struct {
	Status  Status
	Retry   bool          // a retry hint: Retry-After, or a google.rpc.RetryInfo
	RetryIn time.Duration // the hint: Retry-After's seconds, or RetryInfo's delay
	// Quota: the answer describes a rate limit — both RateLimit-Policy
	// and RateLimit in the IETF draft's syntax, or a google.rpc.QuotaFailure
	// with a violation.
	Quota  bool
	Body   []byte // the answer's bytes: the HTTP body, or the marshalled response
	Detail string // for failure messages: the raw status, code or error
}

// Request is one request, in transport-neutral terms.
type Request struct {
	Key     string // the value the lock's key placeholder reads
	NoKey   bool   // send no key value at all (where the transport can tell)
	IdemKey string // the idempotency key
	Scope   string // the caller's idempotency scope
	Body    string // the payload the idempotency fingerprint covers
	// Wire: for a PathClient, the key's path segment exactly as sent
	// (e.g. a malformed escape); "" sends url.PathEscape(Key).
	Wire string
}

// Handler is the application's handler: it runs with the guard's context
// and answers with reply, which the driver encodes into its response
// (Result.Body). A non-nil error makes the driver answer nothing of its
// own (HTTP: write nothing; RPC: return the error).
type Handler func(ctx context.Context) (reply int64, err error)

// Client makes one request to a served handler.
type Client func(ctx context.Context, r Request) Result

// Transport is one adapter's driver.
type Transport interface {
	// Lock serves h behind the adapter's lock with tag, in which %s stands
	// for the transport's placeholder for Request.Key (e.g. {query.k},
	// {req.sku}). A panic in h is left to the transport's own panic
	// handling. Servers stop with t.
	Lock(t testing.TB, lk *locker.Locker, tag string, h Handler) Client
	// Idempotency serves h behind the adapter's idempotency guard, scoped
	// by Request.Scope, fingerprinting Request.Body.
	Idempotency(t testing.TB, lk *locker.Locker, h Handler) Client
	// Chain serves h behind one guard per tag, the first outermost, as a
	// user of the adapter chains them (Gin middleware in order, wrapped
	// net/http handlers, chained interceptors).
	Chain(t testing.TB, lk *locker.Locker, tags []string, h Handler) Client
}

// ClassifyHTTP reads an HTTP answer: the status with the fragment of the
// problem type locktag writes (both must agree), or 200 with the replay
// marker header.
func ClassifyHTTP(status int, h http.Header, body []byte) Result {
	r := Result{Retry: h.Get("Retry-After") != "", Body: body, Detail: http.StatusText(status) + " " + string(body)}
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil {
		r.RetryIn = time.Duration(s) * time.Second
	}
	r.Quota = policyField.MatchString(h.Get("RateLimit-Policy")) && limitField.MatchString(h.Get("RateLimit"))
	typ := problemType(body)
	switch {
	case status == http.StatusOK && h.Get("Idempotent-Replayed") == "true":
		r.Status = Replay
	case status == http.StatusOK:
		r.Status = OK
	case status == http.StatusConflict && typ == "lock-busy":
		r.Status = Busy
	case status == http.StatusTooManyRequests && typ == "limit-full":
		r.Status = LimitFull
	case status == http.StatusTooManyRequests && typ == "rate-limited":
		r.Status = RateLimited
	case status == http.StatusConflict && typ == "idempotency-key-in-flight":
		r.Status = InFlight
	case status == http.StatusServiceUnavailable && (typ == "lock-unavailable" || typ == "idempotency-unavailable"):
		r.Status = Unavailable
	case status == http.StatusServiceUnavailable && typ == "lock-lost":
		r.Status = Lost
	case status == http.StatusBadRequest:
		r.Status = Invalid
	case status == http.StatusNotFound:
		r.Status = NotFound
	case status == http.StatusUnprocessableEntity && typ == "idempotency-key-reused":
		r.Status = Mismatch
	}
	return r
}

// The RateLimit-Policy and RateLimit fields in the draft's Structured
// Field syntax: a quoted policy name, then q and w, or r and t.
var (
	policyField = regexp.MustCompile(`^"(?:[^"\\]|\\["\\])*";q=[0-9]+;w=[1-9][0-9]*$`)
	limitField  = regexp.MustCompile(`^"(?:[^"\\]|\\["\\])*";r=[0-9]+;t=[0-9]+$`)
)

// problemType is the fragment of a problem+json "type", without decoding
// the body as anything but bytes.
func problemType(body []byte) string {
	_, after, ok := strings.Cut(string(body), `"type":"`)
	if !ok {
		return ""
	}
	typ, _, _ := strings.Cut(after, `"`)
	_, frag, _ := strings.Cut(typ, "#")
	return frag
}

// RPC codes, gRPC's numbering (connect shares it).
const (
	codeOK                 = 0
	codeInvalidArgument    = 3
	codeNotFound           = 5
	codeResourceExhausted  = 8
	codeFailedPrecondition = 9
	codeAborted            = 10
	codeUnavailable        = 14
)

// ClassifyRPC reads an RPC answer: the code with the reason of its
// google.rpc.ErrorInfo (domain "locktag").
func ClassifyRPC(code uint32, reason string, retry, replayed bool, body []byte, detail string) Result {
	r := Result{Retry: retry, Body: body, Detail: detail}
	switch {
	case code == codeOK && replayed:
		r.Status = Replay
	case code == codeOK:
		r.Status = OK
	case code == codeAborted && reason == "LOCK_BUSY":
		r.Status = Busy
	case code == codeResourceExhausted && reason == "LOCK_LIMIT_FULL":
		r.Status = LimitFull
	case code == codeResourceExhausted && reason == "RATE_LIMITED":
		r.Status = RateLimited
	case code == codeAborted && reason == "LOCK_LOST":
		r.Status = Lost
	case code == codeAborted && reason == "IDEMPOTENCY_KEY_IN_FLIGHT":
		r.Status = InFlight
	case code == codeUnavailable:
		r.Status = Unavailable
	case code == codeInvalidArgument:
		r.Status = Invalid
	case code == codeNotFound:
		r.Status = NotFound
	case code == codeFailedPrecondition && reason == "IDEMPOTENCY_KEY_REUSED":
		r.Status = Mismatch
	}
	return r
}
