package interceptor

import (
	"context"
	"errors"
	"fmt"

	"github.com/locktag/locktag/interceptor/internal/rpccore"
	"github.com/locktag/locktag/locker/guard/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
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

// IdempotentUnaryClientInterceptor returns a unary client interceptor that
// retries calls without running any twice, following p (nil: retry.New()).
// It applies to the methods named ("/shop.v1.Payments/Charge"), or to every
// unary method if none are: name the methods a server guards. A call without
// idempotency-key metadata gets one key, sent on every attempt. Unavailable,
// ResourceExhausted with a RetryInfo and Aborted (LOCK_BUSY only under
// retry.WithRetryBusy) are retried after the server's hint. ErrKeyReused, a
// call given up (ErrBudgetExhausted), the context's end and a call cut short
// are a *RetryError that keeps its code; other errors are returned as they
// are. Keys, codes and grpc-go's own retries: docs/clients.md.
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
		var key string
		if md, _ := metadata.FromOutgoingContext(ctx); len(md.Get(IdempotencyKeyMetadata)) > 0 {
			key = md.Get(IdempotencyKeyMetadata)[0]
		} else {
			key = retry.FormatKey(p.NewKey())
			ctx = metadata.AppendToOutgoingContext(ctx, IdempotencyKeyMetadata, key)
		}
		a := p.Begin()
		for {
			err := invoker(ctx, method, req, reply, cc, opts...)
			if err == nil {
				return nil
			}
			st := status.Convert(err)
			if ctx.Err() != nil { // the outcome is unknown: the key may get it
				if !errors.Is(err, ctx.Err()) {
					err = fmt.Errorf("%w; %w", err, ctx.Err())
				}
				return &RetryError{Key: key, Attempts: a.N(), Err: err, st: st}
			}
			var details []proto.Message
			for _, d := range st.Details() {
				if m, ok := d.(proto.Message); ok {
					details = append(details, m)
				}
			}
			class, hint := rpccore.RetryClass(rpccore.Code(st.Code()), details)
			switch {
			case class == retry.KeyReused:
				return &RetryError{Key: key, Attempts: a.N(), Err: fmt.Errorf("%w: %w", ErrKeyReused, err), st: st}
			case !p.Retries(class):
				if c := st.Code(); c == codes.DeadlineExceeded || c == codes.Canceled {
					// Cut short, by a deadline or a cancellation on either side:
					// the call may have run.
					return &RetryError{Key: key, Attempts: a.N(), Err: err, st: st}
				}
				return err
			}
			if werr := a.Wait(ctx, class, hint, err); werr != nil {
				if ctx.Err() != nil {
					st = status.FromContextError(ctx.Err())
				}
				return &RetryError{Key: key, Attempts: a.N(), Err: werr, st: st}
			}
		}
	}
}

// RetryError is the error of a call IdempotentUnaryClientInterceptor
// retried, or could retry, without an answer: given up (ErrBudgetExhausted),
// refused (ErrKeyReused), or cut short (by the call's context, or with code
// DeadlineExceeded or Canceled). Except after ErrKeyReused the call may have
// run: a later call with Key in its idempotency-key metadata gets its answer.
// errors.Is matches the sentinel and the context's error through it;
// status.Code gives the last attempt's code, or the context's when it ended
// while the interceptor waited (docs/clients.md#getting-the-key-back).
type RetryError struct {
	// Key is the idempotency-key metadata value every attempt sent (a
	// quoted Structured Field string when the interceptor minted it).
	Key string
	// Attempts is the number of attempts made.
	Attempts int
	// Err is the error: the last attempt's, wrapped with
	// ErrBudgetExhausted, ErrKeyReused or the context's error where one
	// applies.
	Err error

	st *status.Status // the last attempt's, or the context's
}

// Error is Err's text followed by the key.
func (e *RetryError) Error() string {
	return e.Err.Error() + "; " + IdempotencyKeyMetadata + ": " + e.Key
}

// Unwrap returns Err.
func (e *RetryError) Unwrap() error { return e.Err }

// GRPCStatus is the last attempt's status (its code and details), or the
// context's when it ended while the interceptor waited, with Error as its
// message.
func (e *RetryError) GRPCStatus() *status.Status {
	st := e.st
	if st == nil {
		st = status.Convert(e.Err)
	}
	p := st.Proto()
	p.Message = e.Error()
	return status.FromProto(p)
}
