package middleware

import (
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/locktag/locktag/locker"
)

// IdempotencyOption configures Idempotency and NewIdempotency.
type IdempotencyOption func(*idemOptions)

// ScopeFunc returns the caller's scope for an idempotency key: who the
// caller is (principal, tenant, API key hash), as set by the application's
// authentication. Keys of different scopes never meet: one caller's key
// never replays another caller's response. An error or an empty scope
// refuses the request with 401 and ErrScopeUnresolved.
type ScopeFunc func(c *gin.Context) (string, error)

// OversizePolicy says what Idempotency does with a response larger than
// WithMaxResponseBytes. The client of the first request always gets the
// whole response; the policy is about retries.
type OversizePolicy int

const (
	// OversizeKeepKey keeps exactly-once: the key is recorded as done with
	// the response's status but without the response, and a retry is
	// refused with 422 and ErrResponseNotStored. The default.
	OversizeKeepKey OversizePolicy = iota
	// OversizeReleaseKey stores nothing and frees the key: a retry runs the
	// handler again. For handlers that are safe to repeat.
	OversizeReleaseKey
)

// ServerErrorPolicy says what Idempotency does with a 5xx response.
type ServerErrorPolicy int

const (
	// StoreServerErrors stores and replays a 5xx like any other response
	// (Stripe's rule): the handler may have had effects before failing, so
	// it does not run again for the key. The default.
	StoreServerErrors ServerErrorPolicy = iota
	// ReleaseServerErrors stores nothing for a 5xx and frees the key, so a
	// retry runs the handler again. Use it only for handlers whose failures
	// leave nothing behind (one transaction, rolled back on error).
	ReleaseServerErrors
)

// Defaults of the idempotency guard.
const (
	// DefaultIdempotencyHeader is the request header carrying the key.
	DefaultIdempotencyHeader = "Idempotency-Key"
	// ReplayedHeader is set to "true" on every replayed response.
	ReplayedHeader = "Idempotent-Replayed"
	// DefaultMaxResponseBytes caps a stored response body: 1 MiB.
	DefaultMaxResponseBytes = 1 << 20
)

// DefaultReplayHeaders are the response headers stored and replayed
// unless WithReplayHeaders says otherwise.
var DefaultReplayHeaders = []string{
	"Content-Type", "Content-Language", "Content-Encoding", "Content-Disposition",
	"Location", "ETag", "Last-Modified",
}

type idemOptions struct {
	scope         ScopeFunc
	public        bool
	header        string
	optional      bool
	maxKeyLen     int
	params        locker.IdemParams
	maxBodyBytes  int64
	maxRespBytes  int
	oversize      OversizePolicy
	serverErrors  ServerErrorPolicy
	replayHeaders []string // canonical
	errorHandler  ErrorHandler
	err           error
}

func evaluateIdemOptions(opts []IdempotencyOption) (idemOptions, error) {
	o := idemOptions{
		header:        DefaultIdempotencyHeader,
		maxKeyLen:     locker.DefaultMaxIdempotencyKeyLen,
		params:        locker.IdemParams{TTL: locker.DefaultIdemTTL},
		maxBodyBytes:  DefaultMaxBodyBytes,
		maxRespBytes:  DefaultMaxResponseBytes,
		replayHeaders: canonical(DefaultReplayHeaders),
		errorHandler:  WriteIdempotencyProblem,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	switch {
	case o.err != nil:
	case o.public && o.scope != nil:
		o.err = fmt.Errorf("%w: WithScope and WithPublicScope together", ErrBadOption)
	case !o.public && o.scope == nil:
		o.err = ErrNoScope
	}
	return o, o.err
}

func (o *idemOptions) fail(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: "+format, append([]any{ErrBadOption}, args...)...)
	}
}

func canonical(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = http.CanonicalHeaderKey(n)
	}
	return out
}

// WithScope sets the resolver of the caller's scope. A guard needs either
// WithScope or WithPublicScope; without both, construction fails with
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

// WithPublicScope declares that the route has no callers to tell apart:
// every client shares one key space, so anyone who knows a key can replay
// its response. Only for routes without authentication whose responses
// are not private.
func WithPublicScope() IdempotencyOption {
	return func(o *idemOptions) { o.public = true }
}

// WithKeyHeader sets the request header that carries the key. The default
// is DefaultIdempotencyHeader ("Idempotency-Key").
func WithKeyHeader(name string) IdempotencyOption {
	return func(o *idemOptions) {
		if name == "" {
			o.fail("WithKeyHeader(\"\")")
			return
		}
		o.header = http.CanonicalHeaderKey(name)
	}
}

// WithOptionalKey lets requests without the key header through, unguarded.
// The default is to require it: a request without it is refused with 400
// and ErrIdempotencyKeyMissing.
func WithOptionalKey() IdempotencyOption {
	return func(o *idemOptions) { o.optional = true }
}

// WithMaxKeyLen caps the key's length in bytes (after unquoting); a longer
// key is refused with 400 before Redis is touched. The default is
// locker.DefaultMaxIdempotencyKeyLen (255).
func WithMaxKeyLen(n int) IdempotencyOption {
	return func(o *idemOptions) {
		if n < 1 {
			o.fail("WithMaxKeyLen(%d): the cap must be at least 1", n)
			return
		}
		o.maxKeyLen = n
	}
}

// WithRecordTTL sets how long a completed request's response is kept and
// replayed; after it the key may be used afresh. The default is
// locker.DefaultIdemTTL (24h).
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
// third of it while the handler runs. It bounds how long a crashed process
// blocks the key. The default is the Locker's watchdog lease (30s, see
// locker.WithWatchdog).
func WithInFlightLease(d time.Duration) IdempotencyOption {
	return func(o *idemOptions) {
		if d < 3*time.Millisecond {
			o.fail("WithInFlightLease(%v): at least 3ms", d)
			return
		}
		o.params.Lease = d
	}
}

// WithReplayWait makes a request whose key is in flight wait up to d for
// the first request to finish and then replay its response, instead of
// being refused with 409 at once. The wait is never longer than the
// request's context. The default is 0: no wait.
func WithReplayWait(d time.Duration) IdempotencyOption {
	return func(o *idemOptions) {
		if d < 0 {
			o.fail("WithReplayWait(%v): negative", d)
			return
		}
		o.params.Wait = d
	}
}

// WithMaxRequestBytes caps the request body read for the fingerprint; a
// longer body is refused with 413 and ErrBodyTooLarge. The default is
// DefaultMaxBodyBytes (1 MiB).
func WithMaxRequestBytes(n int64) IdempotencyOption {
	return func(o *idemOptions) {
		if n < 1 {
			o.fail("WithMaxRequestBytes(%d): the cap must be at least 1", n)
			return
		}
		o.maxBodyBytes = n
	}
}

// WithMaxResponseBytes caps the response body stored for replay; see
// WithOversizePolicy for a larger one. The default is
// DefaultMaxResponseBytes (1 MiB).
func WithMaxResponseBytes(n int) IdempotencyOption {
	return func(o *idemOptions) {
		if n < 0 {
			o.fail("WithMaxResponseBytes(%d): negative", n)
			return
		}
		o.maxRespBytes = n
	}
}

// WithOversizePolicy sets what happens to a response over
// WithMaxResponseBytes. The default is OversizeKeepKey.
func WithOversizePolicy(p OversizePolicy) IdempotencyOption {
	return func(o *idemOptions) { o.oversize = p }
}

// WithServerErrorPolicy sets whether 5xx responses are stored. The default
// is StoreServerErrors. Either way a 5xx written after the client went away
// (the request's context ended) is not stored, and a panic frees the key.
func WithServerErrorPolicy(p ServerErrorPolicy) IdempotencyOption {
	return func(o *idemOptions) { o.serverErrors = p }
}

// WithReplayHeaders replaces the response headers that are stored and
// replayed with the response. The default is DefaultReplayHeaders.
// Set-Cookie and other per-caller headers do not belong here.
func WithReplayHeaders(names ...string) IdempotencyOption {
	return func(o *idemOptions) { o.replayHeaders = canonical(names) }
}

// WithIdempotencyErrorHandler replaces the writer of refusals. The default
// is WriteIdempotencyProblem. Retry-After is set for 409 before h runs.
func WithIdempotencyErrorHandler(h ErrorHandler) IdempotencyOption {
	return func(o *idemOptions) {
		if h == nil {
			o.fail("WithIdempotencyErrorHandler(nil)")
			return
		}
		o.errorHandler = h
	}
}
