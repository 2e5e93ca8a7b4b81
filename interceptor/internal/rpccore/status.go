package rpccore

import (
	"errors"
	"strconv"
	"strings"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Code is a status code; the numbers are gRPC's, which connect shares.
type Code uint32

// The codes the adapters answer with.
const (
	OK                 Code = 0
	Canceled           Code = 1
	InvalidArgument    Code = 3
	DeadlineExceeded   Code = 4
	ResourceExhausted  Code = 8
	FailedPrecondition Code = 9
	Aborted            Code = 10
	Internal           Code = 13
	Unavailable        Code = 14
	Unauthenticated    Code = 16
)

// The google.rpc.ErrorInfo domain and reasons of refusals.
const (
	ErrorDomain                  = "locktag"
	ReasonBusy                   = "LOCK_BUSY"
	ReasonLimitFull              = "LOCK_LIMIT_FULL"
	ReasonRateLimited            = "RATE_LIMITED"
	ReasonLost                   = "LOCK_LOST"
	ReasonUnavailable            = "LOCK_UNAVAILABLE"
	ReasonKeyMissing             = "IDEMPOTENCY_KEY_MISSING"
	ReasonKeyInvalid             = "IDEMPOTENCY_KEY_INVALID"
	ReasonScopeUnresolved        = "IDEMPOTENCY_SCOPE_UNRESOLVED"
	ReasonInFlight               = "IDEMPOTENCY_KEY_IN_FLIGHT"
	ReasonKeyReused              = "IDEMPOTENCY_KEY_REUSED"
	ReasonResponseNotStored      = "IDEMPOTENCY_RESPONSE_NOT_STORED"
	ReasonIdempotencyUnavailable = "IDEMPOTENCY_UNAVAILABLE"
	ReasonClaimLost              = "IDEMPOTENCY_CLAIM_LOST"
)

// CodeOf returns the code an outcome of kind k is answered with; OK for the kinds in which the handler ran or a response is
// replayed:
//
//	BadKey, MissingIdempotencyKey, BadIdempotencyKey  InvalidArgument
//	TooLarge                                          ResourceExhausted
//	LimitFull                                         ResourceExhausted (+ RetryInfo)
//	RateLimited                                       ResourceExhausted (+ RetryInfo, QuotaFailure)
//	TagMistake, Internal                              Internal
//	Busy, InFlight, Lost                              Aborted (+ RetryInfo)
//	Unavailable                                       Unavailable (+ RetryInfo)
//	Deadline                                          DeadlineExceeded (+ RetryInfo)
//	Canceled                                          Canceled (+ RetryInfo)
//	NoScope                                           Unauthenticated
//	Mismatch, NotStored                               FailedPrecondition
func CodeOf(k guard.Kind) Code {
	switch k {
	case guard.OK, guard.FailedOpen, guard.Replay:
		return OK
	case guard.BadKey, guard.MissingIdempotencyKey, guard.BadIdempotencyKey:
		return InvalidArgument
	case guard.TooLarge, guard.LimitFull, guard.RateLimited:
		return ResourceExhausted
	case guard.Busy, guard.InFlight, guard.Lost:
		return Aborted
	case guard.Unavailable:
		return Unavailable
	case guard.Deadline:
		return DeadlineExceeded
	case guard.Canceled:
		return Canceled
	case guard.NoScope:
		return Unauthenticated
	case guard.Mismatch, guard.NotStored:
		return FailedPrecondition
	}
	return Internal
}

// Refusal maps an outcome to the status with code CodeOf(o.Kind),
// a message that names no key, value or address, and details: a
// google.rpc.ErrorInfo (domain ErrorDomain, a Reason... constant, metadata
// lockName = o.Name for lock refusals, firstCode for NotStored), a
// google.rpc.RetryInfo where the outcome has a retry hint (a rate tag's:
// the exact time to the next slot), a google.rpc.QuotaFailure for a rate
// tag's refusal, and a google.rpc.BadRequest field violation for a bad
// {req...} key value.
func Refusal(o guard.Outcome) (Code, string, []proto.Message) {
	c := CodeOf(o.Kind)
	info := func(reason string, kv ...string) proto.Message {
		ei := &errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain}
		if len(kv) == 2 {
			ei.Metadata = map[string]string{kv[0]: kv[1]}
		}
		return ei
	}
	var details []proto.Message
	msg := ""
	lock := func(reason, m string) { msg, details = m, append(details, info(reason, "lockName", o.Name)) }
	idem := func(reason, m string, kv ...string) { msg, details = m, append(details, info(reason, kv...)) }
	switch k := o.Kind; {
	case k == guard.BadKey:
		return badKey(o.Err)
	case k == guard.Busy:
		lock(ReasonBusy, "lock busy: another call holds it; retry later")
	case k == guard.LimitFull:
		lock(ReasonLimitFull, "concurrency limit reached: every permit is taken; retry later")
	case k == guard.RateLimited:
		lock(ReasonRateLimited, "rate limit exceeded; retry after the RetryInfo delay")
		if q := o.Quota; q != nil {
			details = append(details, quotaFailure(o.Name, q))
		}
	case k == guard.Unavailable && !o.Idempotency:
		lock(ReasonUnavailable, "lock service unavailable")
	case k == guard.Lost && !o.Idempotency:
		lock(ReasonLost, "lock lost while the call ran")
	case k == guard.Unavailable:
		idem(ReasonIdempotencyUnavailable, "idempotency store unavailable; retry with the same key")
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
		first := codeNames[Code(o.Record.Status)]
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
	if d := o.Retry(); d > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
	}
	return c, msg, details
}

// quotaFailure is a rate tag's google.rpc.QuotaFailure: one violation
// whose subject is the guard's name (never the key: it may hold user
// ids), quota id the policy, and quota value the requests per period.
func quotaFailure(name string, q *guard.Quota) proto.Message {
	return &errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
		Subject:     name,
		Description: "rate limit exceeded: at most " + strconv.Itoa(q.Limit) + " requests per " + q.Period.String(),
		QuotaId:     q.Policy,
		QuotaValue:  int64(q.Limit),
	}}}
}

// badKey is InvalidArgument naming the placeholder, with a BadRequest
// field violation for a request field.
func badKey(err error) (Code, string, []proto.Message) {
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
		return InvalidArgument, msg, []proto.Message{&errdetails.BadRequest{
			FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: field + " " + why + "; it names the call's lock"}},
		}}
	}
	return InvalidArgument, msg, nil
}

// codeNames are the gRPC names of codes a first call can have stored.
var codeNames = map[Code]string{0: "OK", 1: "Canceled", 2: "Unknown", 3: "InvalidArgument", 4: "DeadlineExceeded",
	5: "NotFound", 6: "AlreadyExists", 7: "PermissionDenied", 8: "ResourceExhausted", 9: "FailedPrecondition",
	10: "Aborted", 11: "OutOfRange", 12: "Unimplemented", 13: "Internal", 14: "Unavailable", 15: "DataLoss", 16: "Unauthenticated"}
