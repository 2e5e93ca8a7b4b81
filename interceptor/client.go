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
// RetryInfo delay up to retry.WithMaxRetryAfter. A connection lost in the
// middle of an answer is Unavailable too: grpc-go completes a unary call
// only once its message and then its trailers with status OK arrived, so
// a caller never gets a cut answer, and the retry gets the stored one.
// Every attempt gets the call's options (grpc.Header, grpc.Trailer see
// the last attempt).
//
// Errors: FailedPrecondition with reason IDEMPOTENCY_KEY_REUSED fails at
// once with an error wrapping ErrKeyReused; a call given up wraps
// ErrBudgetExhausted and the last attempt's error, keeping its code; a
// context ended while waiting gives Canceled or DeadlineExceeded wrapping
// the context's error. Each of these, and an attempt cut short (by the
// call's context, or with code DeadlineExceeded or Canceled: it may have
// run), is a *RetryError carrying the key, to retry the operation later.
// Other errors are returned as they are.
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
// retried, or could retry, without an answer to return: given up
// (ErrBudgetExhausted), refused (ErrKeyReused), or cut short (by the
// call's context, or with code DeadlineExceeded or Canceled). Whether the call ran on the server is then unknown (except for
// ErrKeyReused): a later call with the same Key in its idempotency-key
// metadata gets its answer, or runs it if it never ran. errors.Is matches
// the sentinel and the context's error through it; status.Code gives the
// last attempt's code, or Canceled or DeadlineExceeded when the context
// ended while the interceptor waited.
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
