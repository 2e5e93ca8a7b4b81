package stdhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// RetryError is the error of a round trip of NewRetryTransport that was
// retried or could be: given up (ErrBudgetExhausted), refused
// (ErrKeyReused, ErrBodyNotRewindable) or ended by the request's context.
// Except after ErrKeyReused, the operation may or may not have run: send it
// again with Key, in the same header, to get its answer. errors.Is matches
// the sentinel and the context's error through it; errors.As finds it
// through an http.Client's *url.Error (docs/clients.md#getting-the-key-back).
type RetryError struct {
	// Key is the idempotency key header's value as every attempt sent it
	// (a quoted Structured Field string when the transport minted it);
	// "" for a request retried without a key (an idempotent method).
	Key string
	// Attempts is the number of attempts sent.
	Attempts int
	// StatusCode is the status of the last attempt's answer; 0 if it got
	// none, or only part of one (the connection was lost in its body).
	StatusCode int
	// Err is the error: it wraps ErrBudgetExhausted, ErrKeyReused,
	// ErrBodyNotRewindable or the context's error, and the last attempt's
	// error or a description of its answer.
	Err error

	header string // the key's header, for Error
}

// Error is Err's text followed by the key and its header.
func (e *RetryError) Error() string {
	if e.Key == "" {
		return e.Err.Error()
	}
	h := e.header
	if h == "" {
		h = DefaultIdempotencyHeader
	}
	return e.Err.Error() + "; " + h + ": " + e.Key
}

// Unwrap returns Err.
func (e *RetryError) Unwrap() error { return e.Err }

// sentKeyContext is the context key under which NewRetryTransport puts
// the idempotency key on the requests it sends, for IdempotencyKeyOf.
type sentKeyContext struct{}

// IdempotencyKeyOf returns the idempotency key of the request that got
// resp: the header value NewRetryTransport sent (whatever its header,
// minted or the caller's), or else resp.Request's Idempotency-Key header;
// "" if there was none. Send it again, in the same header, to retry the
// same operation — for example after reading a streamed body failed.
func IdempotencyKeyOf(resp *http.Response) string {
	if resp == nil || resp.Request == nil {
		return ""
	}
	if k, ok := resp.Request.Context().Value(sentKeyContext{}).(string); ok {
		return k
	}
	return resp.Request.Header.Get(DefaultIdempotencyHeader)
}

// NewRetryTransport returns an http.RoundTripper that sends requests through
// base (nil: http.DefaultTransport) and retries them without running any
// twice, following p (nil: retry.New()). A request whose method is in
// WithRetryKeyMethods (POST, PATCH) and that has no key header gets one key,
// sent on every attempt, and its answer is read into memory first
// (WithMaxBufferedBody). Keyed and idempotent-method requests are retried on
// a lost connection, 409 in flight, 429 and 503; others are sent once. Every
// error of a retried request is a *RetryError (ErrKeyReused,
// ErrBudgetExhausted, ErrBodyNotRewindable, the context's error). Put it
// outermost. Keys, retries, answers and bodies: docs/clients.md.
func NewRetryTransport(base http.RoundTripper, p *retry.Policy, opts ...RetryOption) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if p == nil {
		p = retry.New()
	}
	s := retrySettings{header: "Idempotency-Key", methods: []string{http.MethodPost, http.MethodPatch}, maxBuffered: DefaultMaxBufferedBody}
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
	key, hasKey := req.Header.Get(t.s.header), len(req.Header.Values(t.s.header)) > 0
	minted := !hasKey && t.keyed(req.Method)
	if minted {
		key, hasKey = retry.FormatKey(t.p.NewKey()), true
	}
	if !hasKey && !idempotentMethod(req.Method) {
		return t.base.RoundTrip(req.Clone(ctx))
	}
	sendCtx := ctx
	if hasKey {
		sendCtx = context.WithValue(ctx, sentKeyContext{}, key)
	}
	r := req.Clone(sendCtx)
	if minted {
		r.Header.Set(t.s.header, key) // once: every attempt is a clone of r
	}
	fail := func(attempts, status int, err error) error {
		return &RetryError{Key: key, Attempts: attempts, StatusCode: status, Err: err, header: t.s.header}
	}
	buffer := hasKey && t.s.maxBuffered > 0
	rewindable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	a := t.p.Begin()
	for {
		attempt := r
		if a.N() > 1 {
			attempt = r.Clone(sendCtx)
			if req.Body != nil && req.Body != http.NoBody {
				body, err := req.GetBody()
				if err != nil {
					return nil, fail(a.N()-1, 0, fmt.Errorf("%w: GetBody: %w", ErrBodyNotRewindable, err))
				}
				attempt.Body = body
			}
		}
		resp, err := t.base.RoundTrip(attempt)
		if err != nil && ctx.Err() != nil {
			return nil, fail(a.N(), 0, err)
		}
		var ans answer
		if err == nil {
			ans = answer{resp: resp}
			if buffer {
				if err := ans.buffer(t.s.maxBuffered); err != nil && ctx.Err() != nil {
					if !errors.Is(err, ctx.Err()) {
						return nil, fail(a.N(), 0, fmt.Errorf("%w; %w", ans.cut, ctx.Err()))
					}
					return nil, fail(a.N(), 0, ans.cut)
				}
			}
			if resp.Request == nil {
				resp.Request = attempt
			}
		}
		class, hint, cause := ans.classify(err)
		status := 0
		if class != retry.NoAnswer {
			status = resp.StatusCode
		}
		switch {
		case class == retry.KeyReused:
			discard(resp)
			return nil, fail(a.N(), status, fmt.Errorf("%w: %s %s answered %s; use a new key for a new request", ErrKeyReused, req.Method, req.URL.Redacted(), resp.Status))
		case !t.p.Retries(class):
			return resp, nil
		case !rewindable:
			discard(resp)
			return nil, fail(a.N(), status, fmt.Errorf("%w: %s %s was not retried after %w", ErrBodyNotRewindable, req.Method, req.URL.Redacted(), cause))
		}
		discard(resp)
		if err := a.Wait(ctx, class, hint, cause); err != nil {
			return nil, fail(a.N(), status, err)
		}
	}
}

// answer is one attempt's response, its body read in full (body, whole)
// or its first bytes (body), or cut (cut).
type answer struct {
	resp  *http.Response
	body  []byte
	whole bool  // body is all of it, and resp.Body reads it from memory
	cut   error // reading the body failed: the answer is incomplete
}

// buffer reads the body of a.resp into memory if it is at most limit
// bytes, and hands it back as resp.Body with a consistent ContentLength.
// Over limit, resp.Body is left a stream that still yields every byte. It
// returns the read error of an answer cut short, after closing its body.
func (a *answer) buffer(limit int64) error {
	resp := a.resp
	switch {
	case resp.Body == nil || resp.Body == http.NoBody:
		a.whole = true
		return nil
	case resp.StatusCode == http.StatusSwitchingProtocols || resp.ContentLength > limit:
		return nil // the connection itself, or an answer over the cap: streamed
	}
	size := int(min(4<<10, limit+1)) // unannounced length: grow from a page
	if resp.ContentLength >= 0 {
		size = int(resp.ContentLength) + 1 // room for the read that finds EOF
	}
	b, err := readUpTo(resp.Body, make([]byte, 0, size), limit+1)
	switch {
	case err != nil:
		_ = resp.Body.Close()
		a.body, a.cut = b, &cutError{status: resp.Status, read: len(b), err: err}
		return err
	case int64(len(b)) > limit: // over the cap: what was read, then the rest
		a.body = b
		resp.Body = &streamBody{Reader: io.MultiReader(bytes.NewReader(b), resp.Body), body: resp.Body}
		return nil
	}
	_ = resp.Body.Close()
	a.body, a.whole = b, true
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.TransferEncoding = nil
	if resp.Header.Get("Content-Length") != "" {
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
	}
	return nil
}

// readUpTo appends r's bytes to b until EOF, an error or n bytes.
func readUpTo(r io.Reader, b []byte, n int64) ([]byte, error) {
	r = io.LimitReader(r, n)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		m, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// streamBody is an answer over the buffering cap: its first bytes from
// memory, then the rest from the connection.
type streamBody struct {
	io.Reader
	body io.ReadCloser
}

func (b *streamBody) Close() error { return b.body.Close() }

// cutError is an answer whose connection was lost in its body.
type cutError struct {
	status string
	read   int
	err    error
}

func (e *cutError) Error() string {
	return fmt.Sprintf("answer %s cut after %d bytes of its body: %v", e.status, e.read, e.err)
}

func (e *cutError) Unwrap() error { return e.err }

// statusError describes an answer that was retried or given up on.
type statusError struct{ status string }

func (e *statusError) Error() string { return "answer " + e.status }

// classify sorts one attempt's outcome (err: its transport error) for
// the policy and returns the server's hint and a cause for errors and
// events. An answer cut short is no answer, with its Retry-After.
func (a *answer) classify(err error) (retry.Class, time.Duration, error) {
	if err != nil {
		return retry.NoAnswer, 0, err
	}
	resp := a.resp
	if a.cut != nil {
		return retry.NoAnswer, retryAfter(resp.Header), a.cut
	}
	cause := &statusError{resp.Status}
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		return retry.Throttled, retryAfter(resp.Header), cause
	case http.StatusServiceUnavailable:
		return retry.Unavailable, retryAfter(resp.Header), cause
	case http.StatusConflict:
		switch a.problemType() {
		case "idempotency-key-in-flight":
			return retry.InFlight, retryAfter(resp.Header), cause
		case "lock-busy":
			return retry.Busy, retryAfter(resp.Header), cause
		}
	case http.StatusUnprocessableEntity:
		if a.problemType() == "idempotency-key-reused" {
			return retry.KeyReused, 0, cause
		}
	}
	if a.cut != nil {
		return retry.NoAnswer, retryAfter(resp.Header), a.cut
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
// (locktag's types end in #name), leaving the body readable in full. A
// body not in memory is read up to maxProblem bytes; if that read fails,
// the answer was cut (a.cut).
func (a *answer) problemType() string {
	resp := a.resp
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/problem+json" || resp.Body == nil {
		return ""
	}
	head := a.body
	if !a.whole {
		var err error
		head, err = io.ReadAll(io.LimitReader(resp.Body, maxProblem))
		resp.Body = &streamBody{Reader: io.MultiReader(bytes.NewReader(head), resp.Body), body: resp.Body}
		if err != nil {
			a.cut = &cutError{status: resp.Status, read: len(head), err: err}
			return ""
		}
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
