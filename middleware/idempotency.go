package middleware

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker"
)

// Idempotency returns a per-route middleware that runs the rest of the
// chain at most once per (route, caller scope, Idempotency-Key) and replays
// the stored response to retries, following the IETF httpapi draft "The
// Idempotency-Key HTTP Header Field" and Stripe's rules:
//
//	r.POST("/payments",
//		middleware.Idempotency(lk, middleware.WithScope(accountOf)),
//		pay)
//
// It panics with NewIdempotency's error if an option is invalid or no
// scope is given.
//
// Per request, before Redis is touched: the key header is required (400
// and ErrIdempotencyKeyMissing; WithOptionalKey lets requests without it
// through unguarded), must be one Structured Field string or bare
// printable ASCII of at most 255 bytes (400 and locker.ErrBadIdempotencyKey);
// the scope is resolved (401 and ErrScopeUnresolved); the body is read up
// to its cap (413) and restored for the handler. The fingerprint is the
// SHA-256 of the method, route, path, query and body.
//
// Then, atomically in Redis: a new key is marked in flight and the chain
// runs; its response is passed through to the client and stored (status,
// the headers in WithReplayHeaders, body) for the record TTL. A retry gets
// the stored response with "Idempotent-Replayed: true" and the handler
// does not run. A retry while the first request runs gets 409 with
// Retry-After: 1 (or, with WithReplayWait, waits and replays); a reuse of
// the key for a different request gets 422; Redis down gets 503 (there is
// no fail-open). If a handler panics the key is freed (the panic goes on),
// so the client can retry. See WithServerErrorPolicy and WithOversizePolicy
// for 5xx and large responses, and docs/idempotency.md for composing with
// Lock: put Idempotency first.
func Idempotency(l *locker.Locker, opts ...IdempotencyOption) gin.HandlerFunc {
	h, err := NewIdempotency(l, opts...)
	if err != nil {
		panic(err)
	}
	return h
}

// NewIdempotency is like Idempotency but returns construction errors:
// ErrNilLocker, ErrNoScope, or an error wrapping ErrBadOption.
func NewIdempotency(l *locker.Locker, opts ...IdempotencyOption) (gin.HandlerFunc, error) {
	if l == nil {
		return nil, ErrNilLocker
	}
	o, err := evaluateIdemOptions(opts)
	if err != nil {
		return nil, err
	}
	g := &idemGuard{l: l, o: o}
	return g.serve, nil
}

type idemGuard struct {
	l *locker.Locker
	o idemOptions
}

func (g *idemGuard) serve(c *gin.Context) {
	route := c.FullPath()
	if route == "" {
		c.Next() // no route matched: nothing to guard
		return
	}
	vals := c.Request.Header.Values(g.o.header)
	if len(vals) == 0 {
		if g.o.optional {
			c.Next()
			return
		}
		g.refuse(c, ErrIdempotencyKeyMissing, http.StatusBadRequest)
		return
	}
	if len(vals) > 1 {
		g.refuse(c, fmt.Errorf("%w: more than one field", locker.ErrBadIdempotencyKey), http.StatusBadRequest)
		return
	}
	key, err := locker.ParseIdempotencyKey(vals[0], g.o.maxKeyLen)
	if err != nil {
		g.refuse(c, err, http.StatusBadRequest)
		return
	}
	scope := ""
	if !g.o.public {
		scope, err = g.o.scope(c)
		if err != nil || scope == "" {
			g.refuse(c, errors.Join(ErrScopeUnresolved, err), http.StatusUnauthorized)
			return
		}
	}
	body, err := readBody(c, g.o.maxBodyBytes)
	if err != nil {
		g.refuse(c, err, keyStatus(err))
		return
	}
	orig := c.Request
	name := locker.IdempotencyName(orig.Method+" "+route, scope, key)
	params := g.o.params
	params.Name = route // low cardinality, for spans and metrics
	claim, err := g.l.Idempotent(orig.Context(), name, fingerprint(orig, route, body), params)
	if err != nil {
		status := idemStatus(err)
		if status == http.StatusConflict {
			c.Header("Retry-After", "1")
		}
		g.refuse(c, err, status)
		return
	}
	if out, ok := claim.Replay(); ok {
		g.replay(c, out)
		return
	}
	g.execute(c, claim)
}

// fingerprint sums up what makes two requests the same request.
func fingerprint(r *http.Request, route string, body []byte) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, s := range [...]string{r.Method, route, r.URL.EscapedPath(), r.URL.RawQuery} {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	h.Write(body)
	return string(h.Sum(nil))
}

func (g *idemGuard) replay(c *gin.Context, out []byte) {
	r, err := decodeResponse(out)
	switch {
	case err != nil:
		g.refuse(c, err, http.StatusInternalServerError) // written by a newer version?
	case r.notStored:
		g.refuse(c, &notStoredError{status: r.status}, http.StatusUnprocessableEntity)
	default:
		c.Abort()
		replay(c, r)
	}
}

// execute runs the chain holding claim, then stores or frees the key.
func (g *idemGuard) execute(c *gin.Context, claim *locker.Claim) {
	orig := c.Request
	cw := &captureWriter{ResponseWriter: c.Writer, max: g.o.maxRespBytes}
	c.Writer = cw
	running := orig.WithContext(claim.Context())
	c.Request = running
	finished := false
	defer func() {
		if !finished { // the chain panicked: free the key, let the panic go on
			_ = claim.Abandon(context.WithoutCancel(orig.Context()))
		}
		c.Writer = cw.ResponseWriter
		if c.Request == running {
			c.Request = orig
		} else if c.Request != nil {
			c.Request = c.Request.WithContext(orig.Context())
		}
	}()
	c.Next()
	finished = true
	if claim.Lost() && !cw.Written() {
		_ = claim.Abandon(context.WithoutCancel(orig.Context()))
		g.refuse(c, locker.ErrLockLost, http.StatusServiceUnavailable)
		return
	}
	if err := g.finish(c, orig.Context(), cw, claim); err != nil {
		_ = c.Error(err) // the response is sent; a retry may run the handler again
	}
}

// finish stores the response as the key's outcome, or frees the key.
func (g *idemGuard) finish(c *gin.Context, reqCtx context.Context, cw *captureWriter, claim *locker.Claim) error {
	ctx := context.WithoutCancel(reqCtx)
	status := cw.Status()
	switch {
	case lockRefused(c):
		return claim.Abandon(ctx)
	case status >= 500 && (g.o.serverErrors == ReleaseServerErrors || reqCtx.Err() != nil):
		return claim.Abandon(ctx)
	case cw.over && g.o.oversize == OversizeReleaseKey:
		return claim.Abandon(ctx)
	}
	cw.snapshot() // nothing written yet: the headers gin is about to send
	return claim.Complete(ctx, encodeResponse(status, cw.header, g.o.replayHeaders, cw.body.Bytes(), cw.over))
}

// refuse aborts the chain and hands err to the error handler.
func (g *idemGuard) refuse(c *gin.Context, err error, status int) {
	_ = c.Error(err)
	c.Abort()
	g.o.errorHandler(c, err, status)
}
