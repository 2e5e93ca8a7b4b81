package interceptor

import (
	"context"
	"errors"
	"strings"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
)

// ErrorHandler turns a guard's refusal into the error the client receives.
// fullMethod is the call's method; o.Kind says what happened and o.Err is
// the cause (it may contain the lock key or a Redis address: log it, do not
// send it). It should return a status error (see package status).
type ErrorHandler func(ctx context.Context, fullMethod string, o guard.Outcome) error

// The google.rpc.ErrorInfo domain and reasons DefaultErrorHandler sets.
const (
	// ErrorDomain is the ErrorInfo domain of every refusal.
	ErrorDomain = "locktag"

	ReasonBusy        = "LOCK_BUSY"        // Aborted: the lock stayed busy for the rule's whole wait
	ReasonLost        = "LOCK_LOST"        // Aborted: the lock was lost while the handler ran
	ReasonUnavailable = "LOCK_UNAVAILABLE" // Unavailable: Redis could not be used for the lock

	ReasonKeyMissing        = "IDEMPOTENCY_KEY_MISSING"         // InvalidArgument
	ReasonKeyInvalid        = "IDEMPOTENCY_KEY_INVALID"         // InvalidArgument
	ReasonScopeUnresolved   = "IDEMPOTENCY_SCOPE_UNRESOLVED"    // Unauthenticated
	ReasonInFlight          = "IDEMPOTENCY_KEY_IN_FLIGHT"       // Aborted
	ReasonKeyReused         = "IDEMPOTENCY_KEY_REUSED"          // FailedPrecondition
	ReasonResponseNotStored = "IDEMPOTENCY_RESPONSE_NOT_STORED" // FailedPrecondition
	ReasonIdemUnavailable   = "IDEMPOTENCY_UNAVAILABLE"         // Unavailable
	ReasonClaimLost         = "IDEMPOTENCY_CLAIM_LOST"          // Aborted
)

// Code returns the gRPC code DefaultErrorHandler answers an outcome of
// kind k with; OK for the kinds in which the handler ran or a response is
// replayed:
//
//	BadKey, MissingIdempotencyKey, BadIdempotencyKey  InvalidArgument
//	TooLarge                                          ResourceExhausted
//	TagMistake, Internal                              Internal
//	Busy, InFlight, Lost                              Aborted (+ RetryInfo)
//	Unavailable                                       Unavailable (+ RetryInfo)
//	Deadline                                          DeadlineExceeded
//	Canceled                                          Canceled
//	NoScope                                           Unauthenticated
//	Mismatch, NotStored                               FailedPrecondition
func Code(k guard.Kind) codes.Code {
	switch k {
	case guard.OK, guard.FailedOpen, guard.Replay:
		return codes.OK
	case guard.BadKey, guard.MissingIdempotencyKey, guard.BadIdempotencyKey:
		return codes.InvalidArgument
	case guard.TooLarge:
		return codes.ResourceExhausted
	case guard.Busy, guard.InFlight, guard.Lost:
		return codes.Aborted
	case guard.Unavailable:
		return codes.Unavailable
	case guard.Deadline:
		return codes.DeadlineExceeded
	case guard.Canceled:
		return codes.Canceled
	case guard.NoScope:
		return codes.Unauthenticated
	case guard.Mismatch, guard.NotStored:
		return codes.FailedPrecondition
	}
	return codes.Internal
}

// DefaultErrorHandler maps an outcome to the status with code Code(o.Kind),
// a message that names no key, value or address, and details: a
// google.rpc.ErrorInfo (domain ErrorDomain, a Reason... constant, metadata
// lockName = o.Name for lock refusals, firstCode for NotStored), a
// google.rpc.RetryInfo where the outcome has a retry hint, and a
// google.rpc.BadRequest field violation for a bad {req...} key value.
func DefaultErrorHandler(_ context.Context, _ string, o guard.Outcome) error {
	c := Code(o.Kind)
	info := func(reason string, kv ...string) protoadapt.MessageV1 {
		ei := &errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain}
		if len(kv) == 2 {
			ei.Metadata = map[string]string{kv[0]: kv[1]}
		}
		return ei
	}
	var details []protoadapt.MessageV1
	msg := ""
	lock := func(reason, m string) { msg, details = m, append(details, info(reason, "lockName", o.Name)) }
	idem := func(reason, m string, kv ...string) { msg, details = m, append(details, info(reason, kv...)) }
	switch k := o.Kind; {
	case k == guard.BadKey:
		return badKeyStatus(o.Err)
	case k == guard.Busy:
		lock(ReasonBusy, "lock busy: another call holds it; retry later")
	case k == guard.Unavailable && !o.Idempotency:
		lock(ReasonUnavailable, "lock service unavailable")
	case k == guard.Lost && !o.Idempotency:
		lock(ReasonLost, "lock lost while the call ran")
	case k == guard.Unavailable:
		idem(ReasonIdemUnavailable, "idempotency store unavailable; retry with the same key")
	case k == guard.Lost:
		idem(ReasonClaimLost, "idempotency claim lost while the call ran")
	case k == guard.MissingIdempotencyKey:
		idem(ReasonKeyMissing, "idempotency-key metadata missing")
	case k == guard.BadIdempotencyKey:
		idem(ReasonKeyInvalid, "idempotency-key must be one string of printable ASCII, at most the allowed length")
	case k == guard.NoScope:
		idem(ReasonScopeUnresolved, "caller unknown: idempotency keys cannot be scoped")
	case k == guard.InFlight:
		idem(ReasonInFlight, "a call with this idempotency key is in progress; retry later")
	case k == guard.Mismatch:
		idem(ReasonKeyReused, "idempotency key reused with a different request; use a new key")
	case k == guard.NotStored:
		first := codes.Code(o.Record.Status).String()
		idem(ReasonResponseNotStored, "the call with this idempotency key was processed ("+first+") but its response was too large to store", "firstCode", first)
	case k == guard.Deadline:
		msg = "deadline exceeded while waiting for the lock or the idempotency key"
	case k == guard.Canceled:
		msg = "canceled while waiting for the lock or the idempotency key"
	case k == guard.TooLarge:
		msg = "request too large for the idempotency check"
	case k == guard.TagMistake:
		msg = "lock rule misconfigured for this method; see the server log"
	default:
		msg = "lock service error"
	}
	if o.RetryAfter > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(o.RetryAfter)})
	}
	return withDetails(c, msg, details...)
}

// badKeyStatus is InvalidArgument naming the placeholder, with a BadRequest
// field violation for a request field.
func badKeyStatus(err error) error {
	ph, why := "", "is not valid"
	var te *keyexpr.TemplateError
	if errors.As(err, &te) {
		ph = te.Placeholder
	}
	switch {
	case errors.Is(err, keyexpr.ErrMissingValue):
		why = "is missing or empty"
	case errors.Is(err, keyexpr.ErrValueTooLong):
		why = "is too long"
	}
	msg := "lock key: " + ph + " " + why
	if field, ok := strings.CutPrefix(ph, "{req."); ok {
		field = strings.TrimSuffix(field, "}")
		return withDetails(codes.InvalidArgument, msg, &errdetails.BadRequest{
			FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: field + " " + why + "; it names the call's lock"}},
		})
	}
	return status.Error(codes.InvalidArgument, msg)
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
