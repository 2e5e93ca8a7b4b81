package stdhttp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/locktag/locktag/locker/guard/retry"
)

// The errors of NewRetryTransport's round trips: the same values as
// package retry's, so errors.Is matches them across transports.
var (
	// ErrKeyReused: the server answered 422 idempotency-key-reused — the
	// key was already used with a different request.
	ErrKeyReused = retry.ErrKeyReused
	// ErrBudgetExhausted: the request was given up after its attempts or
	// its time budget were used up.
	ErrBudgetExhausted = retry.ErrBudgetExhausted
	// ErrBodyNotRewindable: a retry was due but the request's body cannot
	// be sent again (it has no GetBody).
	ErrBodyNotRewindable = retry.ErrBodyNotRewindable
)

// NewRetryTransport returns an http.RoundTripper that sends requests
// through base (nil: http.DefaultTransport) and retries them without
// running any twice, following the retry policy p (nil: retry.New()).
//
// Keys: a request whose method is one of WithRetryKeyMethods' (POST and
// PATCH by default) and that has no Idempotency-Key header
// (WithRetryKeyHeader) gets a new key (p's NewKey, as a quoted Structured
// Field string), once, before its first attempt; every retry of that
// request sends the same key. A key the caller set is sent as it is. The
// request passed in is not modified; each attempt sends a clone.
//
// Retries: a request with a key, or with an idempotent method (GET, HEAD,
// OPTIONS, TRACE, PUT, DELETE), is retried on a transport error, on 409
// whose problem type is idempotency-key-in-flight (409 lock-busy only
// under retry.WithRetryBusy; any other 409 is the application's and is
// returned), on 429 and on 503, waiting at least Retry-After (seconds or
// an HTTP date) up to retry.WithMaxRetryAfter. Other requests go to base
// once. The body of a retry comes from Request.GetBody (http.NewRequest
// sets it for in-memory bodies); when it cannot be rewound the round trip
// fails with ErrBodyNotRewindable instead of a retry. Response bodies that
// are not returned are drained a little and closed.
//
// Errors: 422 whose problem type is idempotency-key-reused fails with
// ErrKeyReused; a request given up wraps ErrBudgetExhausted and the last
// attempt's error or status; a context ended while waiting wraps its
// error. The request's context bounds everything.
//
// Put it outermost: a retry layer above it that calls RoundTrip again for
// the same operation gets a new key each time, unless it sets the key
// itself. Retry layers below it (base) resend the key it set. net/http's
// own Transport is one: it resends a request with an Idempotency-Key once,
// same key, when a reused keep-alive connection fails before an answer.
func NewRetryTransport(base http.RoundTripper, p *retry.Policy, opts ...RetryOption) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if p == nil {
		p = retry.New()
	}
	s := retrySettings{header: "Idempotency-Key", methods: []string{http.MethodPost, http.MethodPatch}}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	return &retryTransport{base: base, p: p, s: s}
}

type retryTransport struct {
	base http.RoundTripper
	p    *retry.Policy
	s    retrySettings
}

// CloseIdleConnections closes base's idle connections, if it can, so that
// http.Client.CloseIdleConnections works through the wrapper.
func (t *retryTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (t *retryTransport) keyed(method string) bool {
	for _, m := range t.s.methods {
		if strings.EqualFold(m, method) {
			return true
		}
	}
	return false
}

func idempotentMethod(m string) bool {
	switch m {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// RoundTrip implements http.RoundTripper.
func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	r := req.Clone(ctx)
	hasKey := len(req.Header.Values(t.s.header)) > 0
	if !hasKey && t.keyed(req.Method) {
		r.Header.Set(t.s.header, retry.FormatKey(t.p.NewKey())) // once: every attempt is a clone of r
		hasKey = true
	}
	if !hasKey && !idempotentMethod(req.Method) {
		return t.base.RoundTrip(r)
	}
	rewindable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	a := t.p.Begin()
	for {
		attempt := r
		if a.N() > 1 {
			attempt = r.Clone(ctx)
			if req.Body != nil && req.Body != http.NoBody {
				body, err := req.GetBody()
				if err != nil {
					return nil, fmt.Errorf("%w: GetBody: %w", ErrBodyNotRewindable, err)
				}
				attempt.Body = body
			}
		}
		resp, err := t.base.RoundTrip(attempt)
		if err != nil && ctx.Err() != nil {
			return nil, err
		}
		class, hint, cause := classifyResponse(resp, err)
		switch {
		case class == retry.KeyReused:
			discard(resp)
			return nil, fmt.Errorf("%w: %s %s answered %s; use a new key for a new request", ErrKeyReused, req.Method, req.URL.Redacted(), resp.Status)
		case !t.p.Retries(class):
			return resp, err
		case !rewindable:
			discard(resp)
			return nil, fmt.Errorf("%w: %s %s was not retried after %w", ErrBodyNotRewindable, req.Method, req.URL.Redacted(), cause)
		}
		discard(resp)
		if err := a.Wait(ctx, class, hint, cause); err != nil {
			return nil, err
		}
	}
}

// statusError describes an answer that was retried or given up on.
type statusError struct{ status string }

func (e *statusError) Error() string { return "answer " + e.status }

// classifyResponse sorts one attempt's outcome for the policy and returns
// the server's hint and a cause for errors and events.
func classifyResponse(resp *http.Response, err error) (retry.Class, time.Duration, error) {
	if err != nil {
		return retry.NoAnswer, 0, err
	}
	cause := &statusError{resp.Status}
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		return retry.Throttled, retryAfter(resp.Header), cause
	case http.StatusServiceUnavailable:
		return retry.Unavailable, retryAfter(resp.Header), cause
	case http.StatusConflict:
		switch problemType(resp) {
		case "idempotency-key-in-flight":
			return retry.InFlight, retryAfter(resp.Header), cause
		case "lock-busy":
			return retry.Busy, retryAfter(resp.Header), cause
		}
	case http.StatusUnprocessableEntity:
		if problemType(resp) == "idempotency-key-reused" {
			return retry.KeyReused, 0, cause
		}
	}
	return retry.Done, 0, nil
}

// retryAfter reads Retry-After: delay-seconds or an HTTP date.
func retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(min(max(n, 0), 86400)) * time.Second // a day is past any cap
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(time.Until(at), 0)
	}
	return 0
}

// maxProblem is how much of a problem+json body is read to find its type.
const maxProblem = 4 << 10

// problemType returns the fragment of a problem+json body's type URI
// (locktag's types end in #name), leaving the body readable in full.
func problemType(resp *http.Response) string {
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/problem+json" || resp.Body == nil {
		return ""
	}
	head, err := io.ReadAll(io.LimitReader(resp.Body, maxProblem))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	if err != nil {
		return ""
	}
	var p struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(head, &p) != nil {
		return ""
	}
	_, frag, _ := strings.Cut(p.Type, "#")
	return frag
}

// discard drains a little of a response's body, so its connection can be
// reused, and closes it.
func discard(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxProblem))
	_ = resp.Body.Close()
}
