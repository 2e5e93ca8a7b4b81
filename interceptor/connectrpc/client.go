package connectrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/locktag/locktag/interceptor/connectrpc/internal/rpccore"
	"github.com/locktag/locktag/locker/guard/retry"
)

// The errors of NewIdempotentClient's calls: the same values as package
// retry's, so errors.Is matches them across transports. The errors
// returned keep their connect code (connect.CodeOf works on them).
var (
	// ErrKeyReused: the server answered CodeFailedPrecondition with reason
	// IDEMPOTENCY_KEY_REUSED — the key was used with a different request.
	ErrKeyReused = retry.ErrKeyReused
	// ErrBudgetExhausted: the call was given up after its attempts or its
	// time budget were used up; the error's code is the last attempt's.
	ErrBudgetExhausted = retry.ErrBudgetExhausted
)

// NewIdempotentClient returns a client-side connect.Interceptor that retries
// unary calls without running any twice, following p (nil: retry.New()). It
// applies to the procedures named ("/shop.v1.Payments/Charge"), or to every
// unary procedure if none are: name those a server guards. Streams pass
// through. A call without an Idempotency-Key header gets one key, sent on
// every attempt. CodeUnavailable, a connection lost in an answer,
// CodeResourceExhausted with a RetryInfo and CodeAborted (LOCK_BUSY only
// under retry.WithRetryBusy) are retried after the server's hint. A call
// left without an answer fails with a *RetryError. Put it first in
// connect.WithInterceptors. Keys, codes and cut answers: docs/clients.md.
func NewIdempotentClient(p *retry.Policy, procedures ...string) connect.Interceptor {
	if p == nil {
		p = retry.New()
	}
	c := &idempotentClient{p: p}
	if len(procedures) > 0 {
		c.only = make(map[string]bool, len(procedures))
		for _, proc := range procedures {
			c.only[proc] = true
		}
	}
	return c
}

type idempotentClient struct {
	p    *retry.Policy
	only map[string]bool // nil: every procedure
}

func (c *idempotentClient) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if !req.Spec().IsClient || (c.only != nil && !c.only[req.Spec().Procedure]) {
			return next(ctx, req)
		}
		key := req.Header().Get(IdempotencyKeyHeader)
		if len(req.Header().Values(IdempotencyKeyHeader)) == 0 {
			key = retry.FormatKey(c.p.NewKey())
			req.Header().Set(IdempotencyKeyHeader, key)
			// The caller's request is left as it was: sent again, it is a
			// new operation with a new key.
			defer req.Header().Del(IdempotencyKeyHeader)
		}
		a := c.p.Begin()
		for {
			resp, err := next(ctx, req)
			if err == nil {
				return resp, nil
			}
			if ctx.Err() != nil { // the outcome is unknown: the key may get it
				if !errors.Is(err, ctx.Err()) {
					err = fmt.Errorf("%w; %w", err, ctx.Err())
				}
				return nil, &RetryError{Key: key, Attempts: a.N(), Err: err}
			}
			code, details := connect.CodeOf(err), []proto.Message(nil)
			if ce := new(connect.Error); errors.As(err, &ce) {
				for _, d := range ce.Details() {
					if v, derr := d.Value(); derr == nil {
						details = append(details, v)
					}
				}
			}
			class, hint := rpccore.RetryClass(rpccore.Code(code), details)
			if class == retry.Done && connectionLost(err) {
				class = retry.NoAnswer
			}
			switch {
			case class == retry.KeyReused:
				return nil, &RetryError{Key: key, Attempts: a.N(), Err: fmt.Errorf("%w: %w", ErrKeyReused, err)}
			case !c.p.Retries(class):
				if code == connect.CodeDeadlineExceeded || code == connect.CodeCanceled {
					// Cut short, by a deadline or a cancellation on either side:
					// the call may have run.
					return nil, &RetryError{Key: key, Attempts: a.N(), Err: err}
				}
				return resp, err
			}
			if werr := a.Wait(ctx, class, hint, err); werr != nil {
				if ctx.Err() != nil {
					code := connect.CodeCanceled
					if errors.Is(ctx.Err(), context.DeadlineExceeded) {
						code = connect.CodeDeadlineExceeded
					}
					werr = connect.NewError(code, werr)
				}
				return nil, &RetryError{Key: key, Attempts: a.N(), Err: werr}
			}
		}
	}
}

// connectionLost reports whether err, from an attempt whose context is
// still live, is the client's own report of a connection lost during the
// call — after the server may have begun to answer, so the call may have
// run — rather than an error the server sent. connect-go reports a
// connection lost before any answer with CodeUnavailable (retried as
// it is); one lost later with CodeUnknown ("read message: unexpected
// EOF"), CodeInternal (a gRPC or gRPC-Web answer cut before its trailers,
// an HTTP/2 connection closed under the stream) or, for a request whose
// write failed, CodeCanceled. The cause tells them from other errors with
// those codes: an unexpected EOF, a network error, or net/http's HTTP/2
// connection and trailer errors, which have no type to match.
func connectionLost(err error) bool {
	if connect.IsWireError(err) {
		return false
	}
	switch connect.CodeOf(err) {
	case connect.CodeUnknown, connect.CodeInternal, connect.CodeCanceled:
	case connect.CodeInvalidArgument:
		// connect-go before v1.20 reports a message cut in its envelope
		// as its own InvalidArgument "protocol error: incomplete envelope".
		return strings.Contains(err.Error(), "protocol error: incomplete envelope")
	default:
		return false
	}
	var op *net.OpError
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.As(err, &op) {
		return true
	}
	msg := err.Error()
	for _, s := range lostConnTexts {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// lostConnTexts are the texts of net/http's errors for an HTTP/2
// connection that ended under its streams, and for a body cut in its
// trailer (connect-go before v1.20 reports a gRPC-Web answer cut after
// its end-stream message as CodeInternal "corrupt response" with it).
var lostConnTexts = []string{
	"http2: client connection lost",
	"http2: client connection force closed",
	"http2: client conn is closed",
	"http2: server sent GOAWAY and closed the connection",
	"http: unexpected EOF reading trailer",
}

// RetryError is the error of a call NewIdempotentClient retried, or could
// retry, without an answer: given up (ErrBudgetExhausted), refused
// (ErrKeyReused), or cut short (by the call's context, or with
// CodeDeadlineExceeded or CodeCanceled). Except after ErrKeyReused the call
// may have run: a later call with Key in its Idempotency-Key header gets its
// answer. Other errors are returned as they are. errors.Is matches the
// sentinel and the context's error through it; connect.CodeOf gives the last
// attempt's code, or the context's when it ended while the interceptor
// waited (docs/clients.md#getting-the-key-back).
type RetryError struct {
	// Key is the Idempotency-Key header value every attempt sent (a quoted
	// Structured Field string when the interceptor minted it).
	Key string
	// Attempts is the number of attempts made.
	Attempts int
	// Err is the error: the last attempt's, wrapped with
	// ErrBudgetExhausted, ErrKeyReused or the context's error where one
	// applies.
	Err error
}

// Error is Err's text followed by the key.
func (e *RetryError) Error() string {
	return e.Err.Error() + "; " + IdempotencyKeyHeader + ": " + e.Key
}

// Unwrap returns Err.
func (e *RetryError) Unwrap() error { return e.Err }

// WrapStreamingClient passes streams through: only unary calls are retried.
func (c *idempotentClient) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler passes handler-side streams through.
func (c *idempotentClient) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
