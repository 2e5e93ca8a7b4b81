package middleware

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker"
)

// A stored response ("outcome") is, version 1:
//
//	"H1" flags uvarint(status) uvarint(n) n × (uvarint(len) name uvarint(len) value) body
//
// flags bit 0 set: the body was over the cap and is not stored (the key is
// done but cannot be replayed). A header with several values appears once
// per value, in order.
const (
	outcomeMagic    = "H1"
	flagNotReplayed = 1
)

// storedResponse is a decoded outcome.
type storedResponse struct {
	status    int
	header    [][2]string
	body      []byte
	notStored bool // flagNotReplayed
}

func encodeResponse(status int, h http.Header, names []string, body []byte, notStored bool) []byte {
	var pairs [][2]string
	for _, n := range names {
		for _, v := range h.Values(n) {
			pairs = append(pairs, [2]string{n, v})
		}
	}
	b := make([]byte, 0, 16+len(body))
	b = append(b, outcomeMagic...)
	flags := byte(0)
	if notStored {
		flags |= flagNotReplayed
		body = nil
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(status))
	b = binary.AppendUvarint(b, uint64(len(pairs)))
	for _, p := range pairs {
		for _, s := range p {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
	}
	return append(b, body...)
}

func decodeResponse(b []byte) (*storedResponse, error) {
	bad := errors.New("middleware: unreadable idempotency record")
	if len(b) < 3 || string(b[:2]) != outcomeMagic {
		return nil, bad
	}
	r := &storedResponse{notStored: b[2]&flagNotReplayed != 0}
	b = b[3:]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	str := func() (string, bool) {
		n, ok := next()
		if !ok || n > uint64(len(b)) {
			return "", false
		}
		s := string(b[:n])
		b = b[n:]
		return s, true
	}
	st, ok1 := next()
	n, ok2 := next()
	if !ok1 || !ok2 || st < 100 || st > 999 || n > uint64(len(b)) {
		return nil, bad
	}
	r.status = int(st)
	for range n {
		k, ok1 := str()
		v, ok2 := str()
		if !ok1 || !ok2 {
			return nil, bad
		}
		r.header = append(r.header, [2]string{k, v})
	}
	r.body = b
	return r, nil
}

// captureWriter passes the response through and keeps a copy of up to max
// body bytes and of the headers as they were sent.
type captureWriter struct {
	gin.ResponseWriter
	max    int
	body   bytes.Buffer
	over   bool
	header http.Header // snapshot at the first write
}

func (w *captureWriter) snapshot() {
	if w.header == nil {
		w.header = w.ResponseWriter.Header().Clone()
	}
}

func (w *captureWriter) keep(p []byte) {
	if w.over {
		return
	}
	if w.body.Len()+len(p) > w.max {
		w.over = true
		w.body = bytes.Buffer{}
		return
	}
	w.body.Write(p)
}

func (w *captureWriter) Write(p []byte) (int, error) {
	w.snapshot()
	n, err := w.ResponseWriter.Write(p)
	w.keep(p[:n])
	return n, err
}

func (w *captureWriter) WriteString(s string) (int, error) {
	w.snapshot()
	n, err := w.ResponseWriter.WriteString(s)
	w.keep([]byte(s[:n]))
	return n, err
}

func (w *captureWriter) WriteHeaderNow() {
	w.snapshot()
	w.ResponseWriter.WriteHeaderNow()
}

// replay writes a stored response, marked with ReplayedHeader.
func replay(c *gin.Context, r *storedResponse) {
	h := c.Writer.Header()
	for _, kv := range r.header {
		h.Add(kv[0], kv[1])
	}
	h.Set(ReplayedHeader, "true")
	c.Status(r.status)
	c.Writer.WriteHeaderNow()
	_, _ = c.Writer.Write(r.body)
}

// Errors of the idempotency guard; it also reports locker.ErrInFlight,
// locker.ErrMismatch, locker.ErrBadIdempotencyKey, locker.ErrUnavailable
// and ErrBodyTooLarge.
var (
	// ErrNoScope: a guard was built with neither WithScope nor
	// WithPublicScope.
	ErrNoScope = errors.New("middleware: idempotency guard without a scope resolver (use WithScope or WithPublicScope)")
	// ErrScopeUnresolved: the scope resolver failed or returned "". 401.
	ErrScopeUnresolved = errors.New("middleware: idempotency scope unresolved")
	// ErrIdempotencyKeyMissing: a guarded request without the key header. 400.
	ErrIdempotencyKeyMissing = errors.New("middleware: idempotency key missing")
	// ErrResponseNotStored: the key's first request finished, but its
	// response was over the cap and was not stored (OversizeKeepKey). 422.
	ErrResponseNotStored = errors.New("middleware: idempotent response too large to replay")
)

// notStoredError carries the first response's status.
type notStoredError struct{ status int }

func (e *notStoredError) Error() string        { return ErrResponseNotStored.Error() }
func (e *notStoredError) Is(target error) bool { return target == ErrResponseNotStored }

// idemProblemBase prefixes the idempotency problem types.
const idemProblemBase = "https://github.com/locktag/locktag/blob/main/docs/idempotency.md#"

// WriteIdempotencyProblem is the default error handler of Idempotency. It
// writes an RFC 9457 application/problem+json body whose type names a
// section of docs/idempotency.md: idempotency-key-missing,
// idempotency-key-invalid (400), idempotency-scope-unresolved (401),
// idempotency-key-in-flight (409), idempotency-key-reused and
// idempotency-response-not-stored (422), idempotency-unavailable and
// idempotency-wait-ended (503); other errors as WriteProblem. The detail
// never contains the key, the scope or anything about Redis.
func WriteIdempotencyProblem(c *gin.Context, err error, status int) {
	p := problem{Status: status}
	var ns *notStoredError
	switch {
	case errors.Is(err, ErrIdempotencyKeyMissing):
		p.Type, p.Title, p.Detail = "idempotency-key-missing", "Idempotency key missing",
			"this request needs an Idempotency-Key header"
	case errors.Is(err, locker.ErrBadIdempotencyKey):
		p.Type, p.Title, p.Detail = "idempotency-key-invalid", "Invalid idempotency key",
			"the Idempotency-Key must be one string of printable ASCII, at most the allowed length"
	case errors.Is(err, ErrScopeUnresolved):
		p.Type, p.Title, p.Detail = "idempotency-scope-unresolved", "Caller unknown",
			"the caller could not be identified, so its idempotency keys cannot be scoped"
	case errors.Is(err, locker.ErrMismatch):
		p.Type, p.Title, p.Detail = "idempotency-key-reused", "Idempotency key reused",
			"this key was used with a different request; use a new key for a new request"
	case errors.As(err, &ns):
		p.Type, p.Title = "idempotency-response-not-stored", "Response not replayable"
		p.Detail = "the request with this key was processed (status " + strconv.Itoa(ns.status) +
			") but its response was too large to store"
	case errors.Is(err, locker.ErrInFlight) && !isCtxErr(err):
		p.Type, p.Title, p.Detail = "idempotency-key-in-flight", "Request in progress",
			"a request with this key is still being processed; retry later"
	case isCtxErr(err):
		p.Type, p.Title, p.Detail = "idempotency-wait-ended", "Idempotency check ended",
			"the request's deadline passed or it was cancelled during the idempotency check"
	case errors.Is(err, locker.ErrUnavailable):
		p.Type, p.Title, p.Detail = "idempotency-unavailable", "Idempotency service unavailable",
			"the idempotency store cannot be reached; retry later with the same key"
	default:
		WriteProblem(c, err, status)
		return
	}
	p.Type = idemProblemBase + p.Type
	b, _ := json.Marshal(p)
	c.Data(status, ProblemContentType, b)
}

func isCtxErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// idemStatus is the status for an error from Locker.Idempotent.
func idemStatus(err error) int {
	switch {
	case isCtxErr(err):
		return http.StatusServiceUnavailable
	case errors.Is(err, locker.ErrInFlight):
		return http.StatusConflict
	case errors.Is(err, locker.ErrMismatch):
		return http.StatusUnprocessableEntity
	case errors.Is(err, locker.ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// lockRefused reports whether a Lock middleware further down the chain
// refused the request (bad key, busy, Redis unavailable, wait ended): the
// handler did not run, and the refusal must not be stored as the key's
// outcome.
func lockRefused(c *gin.Context) bool {
	_, refused := c.Get(lockRefusedKey{})
	return refused
}
