package connectrpc

import (
	"context"
	"errors"
	"fmt"

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

// NewIdempotentClient returns a client-side connect.Interceptor that
// retries unary calls without running any twice, following the retry
// policy p (nil: retry.New()). It applies to the procedures named (such
// as "/shop.v1.Payments/Charge"), or to every unary procedure when none
// are named; install it for the procedures a server guards, since a
// server that ignores the key may run a retried call again. Streams and
// handler-side calls pass through.
//
// Keys: a call without an Idempotency-Key header gets a new key (p's
// NewKey, as a quoted Structured Field string), once, before its first
// attempt; every attempt sends the same key, and it is removed from the
// request when the call returns. A key the caller set is sent as it is.
//
// Retries: CodeUnavailable (which is also what a connection error gives),
// CodeResourceExhausted with a google.rpc.RetryInfo, and CodeAborted (in
// flight, a lost lock or claim) — but CodeAborted with reason LOCK_BUSY
// only under retry.WithRetryBusy — waiting at least the RetryInfo delay up
// to retry.WithMaxRetryAfter. CodeFailedPrecondition with reason
// IDEMPOTENCY_KEY_REUSED fails at once with an error wrapping
// ErrKeyReused; a call given up wraps ErrBudgetExhausted and the last
// attempt's error; a context ended while waiting gives CodeCanceled or
// CodeDeadlineExceeded wrapping the context's error. Put it first in
// connect.WithInterceptors, so that interceptors after it see every
// attempt.
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
		if len(req.Header().Values(IdempotencyKeyHeader)) == 0 {
			req.Header().Set(IdempotencyKeyHeader, retry.FormatKey(c.p.NewKey()))
			// The caller's request is left as it was: sent again, it is a
			// new operation with a new key.
			defer req.Header().Del(IdempotencyKeyHeader)
		}
		a := c.p.Begin()
		for {
			resp, err := next(ctx, req)
			if err == nil || ctx.Err() != nil {
				return resp, err
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
			switch {
			case class == retry.KeyReused:
				return nil, fmt.Errorf("%w: %w", ErrKeyReused, err)
			case !c.p.Retries(class):
				return resp, err
			}
			if werr := a.Wait(ctx, class, hint, err); werr != nil {
				if ctx.Err() != nil {
					code := connect.CodeCanceled
					if errors.Is(ctx.Err(), context.DeadlineExceeded) {
						code = connect.CodeDeadlineExceeded
					}
					return nil, connect.NewError(code, werr)
				}
				return nil, werr
			}
		}
	}
}

// WrapStreamingClient passes streams through: only unary calls are retried.
func (c *idempotentClient) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler passes handler-side streams through.
func (c *idempotentClient) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
