package interceptor

import (
	"context"
	"fmt"
	"time"

	"github.com/locktag/locktag/locker"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// IdempotencyOption configures NewIdempotency.
type IdempotencyOption func(*idemOptions)

// ScopeFunc returns the caller's scope for an idempotency key: who the
// caller is (principal, tenant, API key hash), typically put in the context
// by an authentication interceptor that runs first. Keys of different
// scopes never meet. An error or an empty scope fails the call with
// codes.Unauthenticated and ErrScopeUnresolved.
type ScopeFunc func(ctx context.Context) (string, error)

// IdempotencyErrorHandler turns a refused idempotent call into the error
// the client receives; err matches one of ErrIdempotencyKeyMissing,
// locker.ErrBadIdempotencyKey, ErrScopeUnresolved, locker.ErrInFlight,
// locker.ErrMismatch, ErrResponseNotStored, locker.ErrUnavailable,
// locker.ErrLockLost or a context error. If it returns nil,
// DefaultIdempotencyErrorHandler's error is used.
type IdempotencyErrorHandler func(ctx context.Context, err error) error

// OversizePolicy says what the guard does with a response (or error
// status) whose encoding is larger than WithMaxResponseBytes. The first
// caller always gets it; the policy is about retries.
type OversizePolicy int

const (
	// OversizeKeepKey keeps exactly-once: the key is recorded as done with
	// the status code but without the response; a retry fails with
	// codes.FailedPrecondition and ErrResponseNotStored. The default.
	OversizeKeepKey OversizePolicy = iota
	// OversizeReleaseKey stores nothing and frees the key: a retry runs the
	// handler again.
	OversizeReleaseKey
)

// ServerErrorPolicy says what the guard does when the handler fails with a
// server-side code: Unknown, Internal, Unavailable, DataLoss,
// DeadlineExceeded or Unimplemented.
type ServerErrorPolicy int

const (
	// StoreServerErrors stores and replays those statuses like any other
	// outcome: the handler may have had effects before failing, so it does
	// not run again for the key. The default.
	StoreServerErrors ServerErrorPolicy = iota
	// ReleaseServerErrors stores nothing for them and frees the key, so a
	// retry runs the handler again. Only for handlers whose failures leave
	// nothing behind.
	ReleaseServerErrors
)

// Metadata keys and defaults of the idempotency guard.
const (
	// IdempotencyKeyMetadata is the incoming metadata key carrying the key.
	IdempotencyKeyMetadata = "idempotency-key"
	// ReplayedMetadata is set to "true" in the header and trailer metadata
	// of every replayed call.
	ReplayedMetadata = "idempotent-replayed"
	// DefaultMaxResponseBytes caps a stored outcome: 1 MiB.
	DefaultMaxResponseBytes = 1 << 20
)

type idemOptions struct {
	scope        ScopeFunc
	public       bool
	optional     bool
	maxKeyLen    int
	params       locker.IdemParams
	maxRespBytes int
	oversize     OversizePolicy
	serverErrors ServerErrorPolicy
	errorHandler IdempotencyErrorHandler
	files        *protoregistry.Files
	types        *protoregistry.Types
	errs         []error
}

func evaluateIdemOptions(opts []IdempotencyOption) *idemOptions {
	o := &idemOptions{
		maxKeyLen:    locker.DefaultMaxIdempotencyKeyLen,
		params:       locker.IdemParams{TTL: locker.DefaultIdemTTL},
		maxRespBytes: DefaultMaxResponseBytes,
		errorHandler: DefaultIdempotencyErrorHandler,
		files:        protoregistry.GlobalFiles,
		types:        protoregistry.GlobalTypes,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(o)
		}
	}
	switch {
	case o.public && o.scope != nil:
		o.errs = append(o.errs, fmt.Errorf("%w: WithScope and WithPublicScope together", ErrBadOption))
	case !o.public && o.scope == nil:
		o.errs = append(o.errs, ErrNoScope)
	}
	return o
}

func (o *idemOptions) fail(format string, args ...any) {
	o.errs = append(o.errs, fmt.Errorf("%w: "+format, append([]any{ErrBadOption}, args...)...))
}

// WithScope sets the resolver of the caller's scope. A guard needs either
// WithScope or WithPublicScope; without both NewIdempotency fails with
// ErrNoScope.
func WithScope(f ScopeFunc) IdempotencyOption {
	return func(o *idemOptions) {
		if f == nil {
			o.fail("WithScope(nil)")
			return
		}
		o.scope = f
	}
}

// WithPublicScope declares that the methods have no callers to tell apart:
// all clients share one key space, so anyone who knows a key can replay its
// response. Only for unauthenticated methods whose responses are not
// private.
func WithPublicScope() IdempotencyOption {
	return func(o *idemOptions) { o.public = true }
}

// WithOptionalKey lets calls without idempotency-key metadata through,
// unguarded. The default is to require it (codes.InvalidArgument and
// ErrIdempotencyKeyMissing).
func WithOptionalKey() IdempotencyOption {
	return func(o *idemOptions) { o.optional = true }
}

// WithMaxKeyLen caps the key's length in bytes (after unquoting); a longer
// key fails with codes.InvalidArgument before Redis is touched. The default
// is locker.DefaultMaxIdempotencyKeyLen (255).
func WithMaxKeyLen(n int) IdempotencyOption {
	return func(o *idemOptions) {
		if n < 1 {
			o.fail("WithMaxKeyLen(%d): the cap must be at least 1", n)
			return
		}
		o.maxKeyLen = n
	}
}

// WithRecordTTL sets how long a completed call's outcome is kept and
// replayed. The default is locker.DefaultIdemTTL (24h).
func WithRecordTTL(d time.Duration) IdempotencyOption {
	return func(o *idemOptions) {
		if d < time.Millisecond {
			o.fail("WithRecordTTL(%v): at least 1ms", d)
			return
		}
		o.params.TTL = d
	}
}

// WithInFlightLease sets the lease of the in-flight marker, renewed every
// third of it while the handler runs; it bounds how long a crashed process
// blocks the key. The default is the Locker's watchdog lease (30s).
func WithInFlightLease(d time.Duration) IdempotencyOption {
	return func(o *idemOptions) {
		if d < 3*time.Millisecond {
			o.fail("WithInFlightLease(%v): at least 3ms", d)
			return
		}
		o.params.Lease = d
	}
}

// WithReplayWait makes a call whose key is in flight wait up to d for the
// first call to finish and replay its outcome, instead of failing with
// codes.Aborted at once. Never longer than the call's deadline. The default
// is 0: no wait.
func WithReplayWait(d time.Duration) IdempotencyOption {
	return func(o *idemOptions) {
		if d < 0 {
			o.fail("WithReplayWait(%v): negative", d)
			return
		}
		o.params.Wait = d
	}
}

// WithMaxResponseBytes caps the stored outcome (the marshalled response or
// status); see WithOversizePolicy. The default is DefaultMaxResponseBytes.
func WithMaxResponseBytes(n int) IdempotencyOption {
	return func(o *idemOptions) {
		if n < 0 {
			o.fail("WithMaxResponseBytes(%d): negative", n)
			return
		}
		o.maxRespBytes = n
	}
}

// WithOversizePolicy sets what happens to an outcome over
// WithMaxResponseBytes. The default is OversizeKeepKey.
func WithOversizePolicy(p OversizePolicy) IdempotencyOption {
	return func(o *idemOptions) { o.oversize = p }
}

// WithServerErrorPolicy sets whether server-side failures are stored. The
// default is StoreServerErrors. Either way, an error returned after the
// call's context ended (the client cancelled or its deadline passed) is not
// stored, and a panicking handler frees the key.
func WithServerErrorPolicy(p ServerErrorPolicy) IdempotencyOption {
	return func(o *idemOptions) { o.serverErrors = p }
}

// WithIdempotencyErrorHandler replaces the mapping of refusals to client
// errors. The default is DefaultIdempotencyErrorHandler.
func WithIdempotencyErrorHandler(h IdempotencyErrorHandler) IdempotencyOption {
	return func(o *idemOptions) {
		if h != nil {
			o.errorHandler = h
		}
	}
}

// WithIdempotencyRegistry sets where methods and their response types are
// looked up. The defaults are protoregistry.GlobalFiles and GlobalTypes,
// where generated code registers itself.
func WithIdempotencyRegistry(files *protoregistry.Files, types *protoregistry.Types) IdempotencyOption {
	return func(o *idemOptions) {
		if files != nil {
			o.files = files
		}
		if types != nil {
			o.types = types
		}
	}
}
