package interceptor

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/locktag/locktag/locker"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Errors of the idempotency guard; it also reports locker.ErrInFlight,
// locker.ErrMismatch, locker.ErrBadIdempotencyKey and locker.ErrUnavailable.
var (
	// ErrNoScope: NewIdempotency got neither WithScope nor WithPublicScope.
	ErrNoScope = errors.New("interceptor: idempotency guard without a scope resolver (use WithScope or WithPublicScope)")
	// ErrScopeUnresolved: the scope resolver failed or returned "".
	ErrScopeUnresolved = errors.New("interceptor: idempotency scope unresolved")
	// ErrIdempotencyKeyMissing: a guarded call without idempotency-key metadata.
	ErrIdempotencyKeyMissing = errors.New("interceptor: idempotency key missing")
	// ErrResponseNotStored: the key's first call finished, but its outcome
	// was over the cap and was not stored (OversizeKeepKey).
	ErrResponseNotStored = errors.New("interceptor: idempotent response too large to replay")
)

// notStoredError carries the first call's code.
type notStoredError struct{ code codes.Code }

func (e *notStoredError) Error() string        { return ErrResponseNotStored.Error() }
func (e *notStoredError) Is(target error) bool { return target == ErrResponseNotStored }

// The google.rpc.ErrorInfo reasons DefaultIdempotencyErrorHandler sets, in
// domain ErrorDomain.
const (
	ReasonKeyMissing        = "IDEMPOTENCY_KEY_MISSING"         // InvalidArgument
	ReasonKeyInvalid        = "IDEMPOTENCY_KEY_INVALID"         // InvalidArgument
	ReasonScopeUnresolved   = "IDEMPOTENCY_SCOPE_UNRESOLVED"    // Unauthenticated
	ReasonInFlight          = "IDEMPOTENCY_KEY_IN_FLIGHT"       // Aborted
	ReasonKeyReused         = "IDEMPOTENCY_KEY_REUSED"          // FailedPrecondition
	ReasonResponseNotStored = "IDEMPOTENCY_RESPONSE_NOT_STORED" // FailedPrecondition
	ReasonIdemUnavailable   = "IDEMPOTENCY_UNAVAILABLE"         // Unavailable
	ReasonClaimLost         = "IDEMPOTENCY_CLAIM_LOST"          // Aborted
)

// DefaultIdempotencyErrorHandler maps refusals to statuses with a
// google.rpc.ErrorInfo (domain ErrorDomain, the Reason... constants):
// missing or malformed key InvalidArgument; scope unresolved
// Unauthenticated; key in flight Aborted with a google.rpc.RetryInfo of 1s;
// key reused for another request, or the first outcome not stored,
// FailedPrecondition (the latter with metadata firstCode); Redis
// unavailable Unavailable; the caller's deadline or cancellation
// DeadlineExceeded or Canceled; the in-flight marker lost Aborted. Messages
// never contain the key, the scope or anything about Redis.
func DefaultIdempotencyErrorHandler(_ context.Context, err error) error {
	info := func(reason string, kv ...string) *errdetails.ErrorInfo {
		ei := &errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain}
		if len(kv) == 2 {
			ei.Metadata = map[string]string{kv[0]: kv[1]}
		}
		return ei
	}
	var ns *notStoredError
	switch {
	case errors.Is(err, ErrIdempotencyKeyMissing):
		return withDetails(codes.InvalidArgument, "idempotency-key metadata missing", info(ReasonKeyMissing))
	case errors.Is(err, locker.ErrBadIdempotencyKey):
		return withDetails(codes.InvalidArgument, "idempotency-key must be one string of printable ASCII, at most the allowed length", info(ReasonKeyInvalid))
	case errors.Is(err, ErrScopeUnresolved):
		return withDetails(codes.Unauthenticated, "caller unknown: idempotency keys cannot be scoped", info(ReasonScopeUnresolved))
	case errors.Is(err, locker.ErrMismatch):
		return withDetails(codes.FailedPrecondition, "idempotency key reused with a different request; use a new key", info(ReasonKeyReused))
	case errors.As(err, &ns):
		return withDetails(codes.FailedPrecondition, "the call with this idempotency key was processed ("+ns.code.String()+") but its response was too large to store",
			info(ReasonResponseNotStored, "firstCode", ns.code.String()))
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded during the idempotency check")
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "canceled during the idempotency check")
	case errors.Is(err, locker.ErrInFlight):
		return withDetails(codes.Aborted, "a call with this idempotency key is in progress; retry later", info(ReasonInFlight),
			&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Second)})
	case errors.Is(err, locker.ErrLockLost):
		return withDetails(codes.Aborted, "idempotency claim lost while the call ran", info(ReasonClaimLost))
	case errors.Is(err, locker.ErrUnavailable):
		return withDetails(codes.Unavailable, "idempotency store unavailable; retry with the same key", info(ReasonIdemUnavailable))
	}
	return status.Error(codes.Internal, "idempotency check failed")
}

// lockRefused reports whether err is a lock interceptor's refusal by the
// default error handler: the handler did not run.
func lockRefused(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.Domain == ErrorDomain &&
			(ei.Reason == ReasonBusy || ei.Reason == ReasonUnavailable) {
			return true
		}
	}
	return false
}

// serverError reports the codes ServerErrorPolicy is about.
func serverError(c codes.Code) bool {
	switch c {
	case codes.Unknown, codes.Internal, codes.Unavailable, codes.DataLoss, codes.DeadlineExceeded, codes.Unimplemented:
		return true
	}
	return false
}

// A stored outcome is, version 1:
//
//	"G1" flags uvarint(code) payload
//
// with payload the marshalled response for OK, else the marshalled
// google.rpc.Status; flags bit 0: not stored (over the cap; no payload).
const (
	outcomeMagic  = "G1"
	flagNotStored = 1
)

type outcome struct {
	code      codes.Code
	notStored bool
	status    *spb.Status // nil for OK
	response  []byte
}

func encodeOutcome(resp any, herr error) ([]byte, error) {
	var payload []byte
	var err error
	code := codes.OK
	if herr != nil {
		st := status.Convert(herr)
		code = st.Code()
		payload, err = proto.Marshal(st.Proto())
	} else if m, ok := resp.(proto.Message); ok {
		payload, err = proto.Marshal(m)
	} else {
		err = errors.New("interceptor: response is not a proto message")
	}
	if err != nil {
		return nil, err
	}
	b := append([]byte(outcomeMagic), 0)
	b = binary.AppendUvarint(b, uint64(code))
	return append(b, payload...), nil
}

func notStoredOutcome(code codes.Code) []byte {
	b := append([]byte(outcomeMagic), flagNotStored)
	return binary.AppendUvarint(b, uint64(code))
}

func decodeOutcome(b []byte) (*outcome, error) {
	bad := errors.New("interceptor: unreadable idempotency record")
	if len(b) < 4 || string(b[:2]) != outcomeMagic {
		return nil, bad
	}
	c, n := binary.Uvarint(b[3:])
	if n <= 0 || c > 16 {
		return nil, bad
	}
	o := &outcome{code: codes.Code(c), notStored: b[2]&flagNotStored != 0}
	payload := b[3+n:]
	switch {
	case o.notStored:
	case o.code == codes.OK:
		o.response = payload
	default:
		o.status = &spb.Status{}
		if err := proto.Unmarshal(payload, o.status); err != nil {
			return nil, bad
		}
	}
	return o, nil
}
