package interceptor

import (
	"context"

	"github.com/locktag/locktag/interceptor/internal/rpccore"
	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
)

// ErrorHandler turns a guard's refusal into the error the client receives.
// fullMethod is the call's method; o.Kind says what happened and o.Err is
// the cause (it may contain the lock key or a Redis address: log it, do not
// send it). It should return a status error (see package status).
type ErrorHandler func(ctx context.Context, fullMethod string, o guard.Outcome) error

// The google.rpc.ErrorInfo domain and reasons DefaultErrorHandler sets
// (the connect adapter sets the same).
const (
	// ErrorDomain is the ErrorInfo domain of every refusal.
	ErrorDomain = rpccore.ErrorDomain

	ReasonBusy        = rpccore.ReasonBusy        // Aborted: the lock stayed busy for the rule's whole wait
	ReasonLimitFull   = rpccore.ReasonLimitFull   // ResourceExhausted: every permit of the rule's limit stayed taken
	ReasonRateLimited = rpccore.ReasonRateLimited // ResourceExhausted: the rule's rate is used up (with RetryInfo and QuotaFailure)
	ReasonLost        = rpccore.ReasonLost        // Aborted: the lock was lost while the handler ran
	ReasonUnavailable = rpccore.ReasonUnavailable // Unavailable: Redis could not be used for the lock

	ReasonKeyMissing             = rpccore.ReasonKeyMissing             // InvalidArgument
	ReasonKeyInvalid             = rpccore.ReasonKeyInvalid             // InvalidArgument
	ReasonScopeUnresolved        = rpccore.ReasonScopeUnresolved        // Unauthenticated
	ReasonInFlight               = rpccore.ReasonInFlight               // Aborted
	ReasonKeyReused              = rpccore.ReasonKeyReused              // FailedPrecondition
	ReasonResponseNotStored      = rpccore.ReasonResponseNotStored      // FailedPrecondition
	ReasonIdempotencyUnavailable = rpccore.ReasonIdempotencyUnavailable // Unavailable
	ReasonClaimLost              = rpccore.ReasonClaimLost              // Aborted
)

// Code returns the gRPC code DefaultErrorHandler answers an outcome of kind k
// with: OK where the handler ran or a response is replayed; InvalidArgument
// for BadKey, MissingIdempotencyKey and BadIdempotencyKey; ResourceExhausted
// for TooLarge, LimitFull and RateLimited; Internal for TagMistake and
// Internal; Aborted for Busy, InFlight and Lost; Unavailable, DeadlineExceeded
// and Canceled for Unavailable, Deadline and Canceled; Unauthenticated for
// NoScope; FailedPrecondition for Mismatch and NotStored. Messages and details
// (RetryInfo, ErrorInfo): docs/grpc.md#status-codes, docs/idempotency.md.
func Code(k guard.Kind) codes.Code { return codes.Code(rpccore.CodeOf(k)) }

// DefaultErrorHandler maps an outcome to the status with code Code(o.Kind),
// a message that names no key, value or address, and details: a
// google.rpc.ErrorInfo (domain ErrorDomain, a Reason... constant, metadata
// lockName = o.Name for lock refusals, firstCode for NotStored), a
// google.rpc.RetryInfo where the outcome has a retry hint (for a rate
// rule, the exact time to the next slot), a google.rpc.QuotaFailure for
// a rate rule's refusal, and a google.rpc.BadRequest field violation for
// a bad {req...} key value.
func DefaultErrorHandler(_ context.Context, _ string, o guard.Outcome) error {
	c, msg, details := rpccore.Refusal(o)
	v1 := make([]protoadapt.MessageV1, len(details))
	for i, d := range details {
		v1[i] = protoadapt.MessageV1Of(d)
	}
	return withDetails(codes.Code(c), msg, v1...)
}

func withDetails(c codes.Code, msg string, details ...protoadapt.MessageV1) error {
	st := status.New(c, msg)
	if len(details) == 0 {
		return st.Err()
	}
	if ds, err := st.WithDetails(details...); err == nil {
		st = ds
	}
	return st.Err()
}
