package interceptor

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Kind classifies a lock failure.
type Kind int

// The kinds of failure, with the status DefaultErrorHandler maps them to.
const (
	// KindBadKey: a key value is missing, empty or too long, or an
	// application source failed. InvalidArgument (with google.rpc.BadRequest
	// for {req...} fields).
	KindBadKey Kind = iota + 1
	// KindBusy: another holder kept the lock for the whole wait. Aborted,
	// with google.rpc.ErrorInfo (reason "LOCK_BUSY") and google.rpc.RetryInfo.
	KindBusy
	// KindDeadline: the call's deadline passed while it waited for the lock.
	// DeadlineExceeded.
	KindDeadline
	// KindCanceled: the client cancelled the call while it waited. Canceled.
	KindCanceled
	// KindUnavailable: Redis could not be reached, failed, or the connection
	// pool was exhausted; the lock state is unknown. Unavailable, with
	// ErrorInfo reason "LOCK_UNAVAILABLE" (or, with WithFailOpen, the handler
	// runs without the lock and no error handler is called).
	KindUnavailable
	// KindLost: the lock was lost (its lease ran out or could not be renewed)
	// before the handler returned, and the handler returned an error or no
	// response. Aborted, with ErrorInfo reason "LOCK_LOST".
	KindLost
	// KindInternal: any other locker error. Internal.
	KindInternal
)

var kindNames = [...]string{"", "bad key", "busy", "deadline", "canceled", "unavailable", "lost", "internal"}

// String returns a short lower-case name, such as "busy".
func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Failure describes why a call did not get, or did not keep, its lock.
type Failure struct {
	// Kind says what went wrong; DefaultErrorHandler maps it to a status.
	Kind Kind
	// FullMethod is the call's method, "/shop.v1.Inventory/Reserve".
	FullMethod string
	// Name is the rule's low-cardinality name: the tag's name field, or the
	// full method.
	Name string
	// RetryDelay is the delay to advertise for KindBusy (WithRetryDelay).
	RetryDelay time.Duration
	// Err is the underlying error: a *keyexpr.TemplateError for KindBadKey
	// (naming the placeholder, never the value), a locker error otherwise;
	// for KindLost, locker.ErrLockLost joined with the handler's error. It
	// may contain the lock key or a Redis address: log it, do not send it.
	Err error
}

// ErrorHandler turns a lock failure into the error the client receives.
// It should return a status error (see package status).
type ErrorHandler func(ctx context.Context, f *Failure) error

// The google.rpc.ErrorInfo domain and reasons DefaultErrorHandler sets.
const (
	// ErrorDomain is the ErrorInfo domain of every lock failure.
	ErrorDomain = "locktag"
	// ReasonBusy: the lock stayed busy for the rule's whole wait (Aborted).
	ReasonBusy = "LOCK_BUSY"
	// ReasonLost: the lock was lost while the handler ran (Aborted).
	ReasonLost = "LOCK_LOST"
	// ReasonUnavailable: Redis could not be used (Unavailable).
	ReasonUnavailable = "LOCK_UNAVAILABLE"
)

// Status messages. They name no key, value or address.
const (
	errorInfoLockName = "lockName" // ErrorInfo metadata key: Failure.Name
	msgBusy           = "lock busy: another call holds it; retry later"
	msgDeadline       = "deadline exceeded while waiting for the lock"
	msgCanceled       = "canceled while waiting for the lock"
	msgUnavailable    = "lock service unavailable"
	msgLost           = "lock lost while the call ran"
	msgInternal       = "lock service error"
)

// DefaultErrorHandler maps failures to statuses as documented on each Kind.
// Messages and details name the rule (Failure.Name) and, for a bad key, the
// placeholder, never the resolved key, its values or the Redis address.
func DefaultErrorHandler(_ context.Context, f *Failure) error {
	info := func(reason string) *errdetails.ErrorInfo {
		return &errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain, Metadata: map[string]string{errorInfoLockName: f.Name}}
	}
	switch f.Kind {
	case KindBadKey:
		return badKeyStatus(f.Err)
	case KindBusy:
		return withDetails(codes.Aborted, msgBusy, info(ReasonBusy),
			&errdetails.RetryInfo{RetryDelay: durationpb.New(f.RetryDelay)})
	case KindDeadline:
		return status.Error(codes.DeadlineExceeded, msgDeadline)
	case KindCanceled:
		return status.Error(codes.Canceled, msgCanceled)
	case KindUnavailable:
		return withDetails(codes.Unavailable, msgUnavailable, info(ReasonUnavailable))
	case KindLost:
		return withDetails(codes.Aborted, msgLost, info(ReasonLost))
	}
	return status.Error(codes.Internal, msgInternal)
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
	if ds, err := st.WithDetails(details...); err == nil {
		st = ds
	}
	return st.Err()
}

// classify sorts an error from Key.Eval or Locker.Obtain into a Kind.
func classify(err error) Kind {
	var te *keyexpr.TemplateError
	switch {
	case errors.As(err, &te):
		return KindBadKey
	case errors.Is(err, locker.ErrUnavailable), errors.Is(err, locker.ErrPoolExhausted):
		return KindUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		return KindDeadline
	case errors.Is(err, context.Canceled):
		return KindCanceled
	case errors.Is(err, locker.ErrLockLost):
		return KindLost
	case errors.Is(err, locker.ErrNotObtained):
		return KindBusy
	}
	return KindInternal
}
