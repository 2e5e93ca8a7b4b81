package interceptor

import (
	"context"
	"fmt"

	"github.com/locktag/locktag/interceptor/internal/rpccore"
	"github.com/locktag/locktag/locker/guard/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// The errors of IdempotentUnaryClientInterceptor's calls: the same values
// as package retry's, so errors.Is matches them across transports. The
// errors returned keep their gRPC status (status.Code works on them).
var (
	// ErrKeyReused: the server answered FailedPrecondition with reason
	// IDEMPOTENCY_KEY_REUSED — the key was used with a different request.
	ErrKeyReused = retry.ErrKeyReused
	// ErrBudgetExhausted: the call was given up after its attempts or its
	// time budget were used up; the error's status is the last attempt's.
	ErrBudgetExhausted = retry.ErrBudgetExhausted
)

// IdempotentUnaryClientInterceptor returns a unary client interceptor
// that retries calls without running any twice, following the retry
// policy p (nil: retry.New()). It applies to the methods named (full
// names, such as "/shop.v1.Payments/Charge"), or to every unary method
// when none are named; install it for the methods a server guards, since
// a server that ignores the key may run a retried call again.
//
// Keys: a call whose outgoing metadata has no idempotency-key gets a new
// key (p's NewKey, as a quoted Structured Field string), once, before its
// first attempt; every attempt sends the same key. A key the caller put
// in the metadata is sent as it is.
//
// Retries: Unavailable, ResourceExhausted with a google.rpc.RetryInfo, and
// Aborted (in flight, a lost lock or claim) — but Aborted with reason
// LOCK_BUSY only under retry.WithRetryBusy — waiting at least the
// RetryInfo delay up to retry.WithMaxRetryAfter. FailedPrecondition with
// reason IDEMPOTENCY_KEY_REUSED fails at once with an error wrapping
// ErrKeyReused; a call given up wraps ErrBudgetExhausted and the last
// attempt's error; a context ended while waiting gives Canceled or
// DeadlineExceeded wrapping the context's error. Every attempt gets the
// call's options (grpc.Header, grpc.Trailer see the last attempt).
//
// grpc-go's own retries run below interceptors and resend the metadata
// this interceptor set, so they reuse its key: transparent retries (of
// calls that never reached the server) need nothing. A service config
// retryPolicy with retryableStatusCodes would retry status answers too,
// multiplying the attempts and ignoring RetryInfo and ErrorInfo; use this
// interceptor for status-based retries instead (docs/clients.md).
func IdempotentUnaryClientInterceptor(p *retry.Policy, methods ...string) grpc.UnaryClientInterceptor {
	if p == nil {
		p = retry.New()
	}
	var only map[string]bool
	if len(methods) > 0 {
		only = make(map[string]bool, len(methods))
		for _, m := range methods {
			only[m] = true
		}
	}
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if only != nil && !only[method] {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		if md, _ := metadata.FromOutgoingContext(ctx); len(md.Get(IdempotencyKeyMetadata)) == 0 {
			ctx = metadata.AppendToOutgoingContext(ctx, IdempotencyKeyMetadata, retry.FormatKey(p.NewKey()))
		}
		a := p.Begin()
		for {
			err := invoker(ctx, method, req, reply, cc, opts...)
			if err == nil || ctx.Err() != nil {
				return err
			}
			st := status.Convert(err)
			var details []proto.Message
			for _, d := range st.Details() {
				if m, ok := d.(proto.Message); ok {
					details = append(details, m)
				}
			}
			class, hint := rpccore.RetryClass(rpccore.Code(st.Code()), details)
			switch {
			case class == retry.KeyReused:
				return fmt.Errorf("%w: %w", ErrKeyReused, err)
			case !p.Retries(class):
				return err
			}
			if werr := a.Wait(ctx, class, hint, err); werr != nil {
				if ctx.Err() != nil {
					return &endedError{st: status.FromContextError(ctx.Err()), err: werr}
				}
				return werr
			}
		}
	}
}

// endedError is a call whose context ended while it waited to retry: its
// status is the context's (Canceled, DeadlineExceeded), not the last
// attempt's.
type endedError struct {
	st  *status.Status
	err error
}

func (e *endedError) Error() string              { return e.err.Error() }
func (e *endedError) Unwrap() error              { return e.err }
func (e *endedError) GRPCStatus() *status.Status { return e.st }
