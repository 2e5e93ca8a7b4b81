package guard

import (
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
)

// Option configures a lock guard (NewLock, CompileLock) or an idempotency
// guard (NewIdempotency), or, made with AdapterOption, the adapter that
// builds one. Each With... option says which guards take it; giving one to
// the other kind of guard is a construction error wrapping locker.ErrBadOption, as
// is an invalid value. Options apply in order; a later one wins. Every
// adapter's Option is this type: the guard's options pass to any adapter,
// and an adapter's own options only to the adapter that made them (any
// other refuses them at construction). The zero Option does nothing.
type Option struct {
	name     string
	use      Target
	apply    func(*settings) error
	owner    string       // an adapter option's package
	settings reflect.Type // an adapter option's settings, *S
	adapter  func(settings any) error
}

// Target says which guards an option applies to.
type Target uint8

// The targets.
const (
	LockGuards Target = 1 << iota
	IdempotencyGuards
	AllGuards = LockGuards | IdempotencyGuards

	forLock = LockGuards
	forIdem = IdempotencyGuards
	forBoth = AllGuards
)

// Defaults.
const (
	// DefaultMaxRequestBytes caps the request body an adapter reads for a
	// guard: 1 MiB.
	DefaultMaxRequestBytes = 1 << 20
	// DefaultMaxResponseBytes caps a stored answer: 1 MiB.
	DefaultMaxResponseBytes = 1 << 20
)

// OversizePolicy says what an idempotency guard does with an answer larger
// than WithMaxResponseBytes. The first client always gets the whole answer;
// the policy is about retries.
type OversizePolicy uint8

const (
	// OversizeKeepKey keeps exactly-once: the key is recorded as done with
	// the answer's status but without the answer; a retry gets NotStored.
	// The default.
	OversizeKeepKey OversizePolicy = iota
	// OversizeReleaseKey stores nothing and frees the key: a retry runs
	// the call again. For calls that are safe to repeat.
	OversizeReleaseKey
)

// ServerErrorPolicy says what an idempotency guard does with an answer the
// adapter marks as a server error (HTTP 5xx; gRPC Unknown, Internal,
// Unavailable, DataLoss, DeadlineExceeded, Unimplemented).
type ServerErrorPolicy uint8

const (
	// StoreServerErrors stores and replays server errors like any other
	// answer (Stripe's rule): the call may have had effects before failing,
	// so it does not run again for the key. The default.
	StoreServerErrors ServerErrorPolicy = iota
	// ReleaseServerErrors stores nothing for a server error and frees the
	// key, so a retry runs the call again. Only for calls whose failures
	// leave nothing behind.
	ReleaseServerErrors
)

// ScopeFunc returns the caller's scope for an idempotency key from the
// adapter's request: who the caller is (principal, tenant, API key hash).
// Keys of different scopes never meet. An error or "" refuses the request
// with NoScope.
type ScopeFunc[R any] func(r R) (string, error)

// settings are the evaluated options of one guard.
type settings struct {
	use          Target
	logger       *slog.Logger
	maxReqBytes  int64
	failOpen     bool
	maxValueLen  int
	retryAfter   time.Duration // 0: from the tag's wait
	scope        any           // a ScopeFunc[R]
	public       bool
	optional     bool
	maxKeyLen    int
	params       locker.IdempotencyParams
	maxRespBytes int
	oversize     OversizePolicy
	serverErrors ServerErrorPolicy
	fingerprint  Fingerprint
}

// evaluate applies opts for a guard of kind u, collecting every error.
func evaluate(u Target, opts []Option) (*settings, error) {
	s := &settings{
		use:          u,
		logger:       slog.Default(),
		maxReqBytes:  DefaultMaxRequestBytes,
		maxValueLen:  keyexpr.DefaultMaxValueLen,
		maxKeyLen:    DefaultMaxKeyLen,
		params:       locker.IdempotencyParams{TTL: locker.DefaultIdempotencyTTL},
		maxRespBytes: DefaultMaxResponseBytes,
		fingerprint:  Fingerprint1,
	}
	var errs []error
	for _, o := range opts {
		switch {
		case o.apply == nil:
			continue // an adapter's option, or the zero Option
		case o.use&u == 0:
			errs = append(errs, fmt.Errorf("%w: %s does not apply to this guard", locker.ErrBadOption, o.name))
		default:
			if err := o.apply(s); err != nil {
				errs = append(errs, fmt.Errorf("%w: %s: %w", locker.ErrBadOption, o.name, err))
			}
		}
	}
	return s, joinErrs(errs)
}

// scopeFor returns the ScopeFunc for requests of type R.
func scopeFor[R any](s *settings) (ScopeFunc[R], error) {
	switch f := s.scope.(type) {
	case nil:
		if !s.public {
			return nil, ErrNoScope
		}
		return nil, nil
	case ScopeFunc[R]:
		if s.public {
			return nil, fmt.Errorf("%w: WithScope and WithPublicScope together", locker.ErrBadOption)
		}
		return f, nil
	default:
		return nil, fmt.Errorf("%w: WithScope: the resolver reads %T, this guard's requests are %v",
			locker.ErrBadOption, f, reflect.TypeFor[R]())
	}
}

func option(name string, u Target, apply func(*settings) error) Option {
	return Option{name: name, use: u, apply: apply}
}

// WithLogger sets where a guard logs what only the server can fix — a
// TagMistake (once per route or method, naming the tag), Redis unavailable
// (once when an outage starts, at most once a minute while it lasts, once
// when it ends; see Lock.Run) — and where adapters without an error
// channel of their own (net/http) log an error that came after the
// handler ran (Logger). Both guards. The default is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return option("WithLogger", forBoth, func(s *settings) error {
		if l == nil {
			return fmt.Errorf("nil logger")
		}
		s.logger = l
		return nil
	})
}

// WithMaxRequestBytes caps how much of a request body the adapter reads
// for a guard: for {body...} placeholders (lock guards) and for the
// fingerprint (idempotency guards). A longer body is refused with TooLarge
// before Redis is touched. Both guards; n must be at least 1. The default
// is DefaultMaxRequestBytes (1 MiB).
func WithMaxRequestBytes(n int64) Option {
	return option("WithMaxRequestBytes", forBoth, func(s *settings) error {
		if n < 1 {
			return fmt.Errorf("%d: the cap must be at least 1", n)
		}
		s.maxReqBytes = n
		return nil
	})
}

// WithFailOpen makes a lock guard run the call WITHOUT the lock when Redis
// is unavailable or the pool is exhausted (an error matching
// locker.ErrUnavailable); the Outcome is then FailedOpen, and inside the
// call FailOpenCause(ctx) returns the error. Nothing else fails open: busy,
// bad keys, the end of the request's context, a record of another
// protocol (locker.ErrProtocol: Redis answered, and another release may
// hold the lock) and a Locker shut down (locker.ErrClosed) are refused as
// usual. Lock
// guards only. The default is fail-closed (Unavailable, the call does not
// run).
func WithFailOpen() Option {
	return option("WithFailOpen", forLock, func(s *settings) error { s.failOpen = true; return nil })
}

// WithMaxValueLen caps the length in bytes of each key placeholder's value
// (keyexpr.WithMaxValueLen); a longer value is BadKey, or hashed when the
// tag says long:"hash". Lock guards only; n must be at least 1. The
// default is keyexpr.DefaultMaxValueLen (256).
func WithMaxValueLen(n int) Option {
	return option("WithMaxValueLen", forLock, func(s *settings) error {
		if n < 1 {
			return fmt.Errorf("%d: the cap must be at least 1", n)
		}
		s.maxValueLen = n
		return nil
	})
}

// WithRetryAfter sets the retry hint (Outcome.RetryAfter) a lock guard
// gives with Busy. Lock guards only; d must be positive. The default is
// the tag's wait rounded up to whole seconds, at least 1s.
func WithRetryAfter(d time.Duration) Option {
	return option("WithRetryAfter", forLock, func(s *settings) error {
		if d <= 0 {
			return fmt.Errorf("%v: must be positive", d)
		}
		s.retryAfter = d
		return nil
	})
}

// WithScope sets the resolver of the caller's scope; R must be the
// adapter's request type (*gin.Context for the Gin adapter,
// context.Context for gRPC). An idempotency guard needs WithScope or
// WithPublicScope; with neither, construction fails with ErrNoScope.
// Idempotency guards only.
func WithScope[R any](f ScopeFunc[R]) Option {
	return option("WithScope", forIdem, func(s *settings) error {
		if f == nil {
			return fmt.Errorf("nil resolver")
		}
		s.scope = f
		return nil
	})
}

// WithPublicScope declares that the guarded route or method has no callers
// to tell apart: every client shares one key space, so anyone who knows a
// key can replay its answer. Only for unauthenticated endpoints whose
// answers are not private. Idempotency guards only.
func WithPublicScope() Option {
	return option("WithPublicScope", forIdem, func(s *settings) error { s.public = true; return nil })
}

// WithOptionalKey lets requests without an idempotency key through,
// unguarded (Outcome OK). Idempotency guards only. The default is to
// require the key (MissingIdempotencyKey).
func WithOptionalKey() Option {
	return option("WithOptionalKey", forIdem, func(s *settings) error { s.optional = true; return nil })
}

// WithMaxKeyLen caps the idempotency key's length in bytes (after
// unquoting); a longer key is BadIdempotencyKey before Redis is touched.
// Idempotency guards only; n must be at least 1. The default is
// DefaultMaxKeyLen (255).
func WithMaxKeyLen(n int) Option {
	return option("WithMaxKeyLen", forIdem, func(s *settings) error {
		if n < 1 {
			return fmt.Errorf("%d: the cap must be at least 1", n)
		}
		s.maxKeyLen = n
		return nil
	})
}

// WithRecordTTL sets how long a finished request's answer is kept and
// replayed; after it the key may be used afresh. Idempotency guards only;
// at least 1ms. The default is locker.DefaultIdempotencyTTL (24h).
func WithRecordTTL(d time.Duration) Option {
	return option("WithRecordTTL", forIdem, func(s *settings) error {
		if d < time.Millisecond {
			return fmt.Errorf("%v: at least 1ms", d)
		}
		s.params.TTL = d
		return nil
	})
}

// WithInFlightLease sets the lease of the in-flight marker, renewed every
// third of it while the call runs; it bounds how long a crashed process
// blocks the key. Idempotency guards only; at least 3ms. The default is
// the Locker's watchdog lease (30s, see locker.WithWatchdog).
func WithInFlightLease(d time.Duration) Option {
	return option("WithInFlightLease", forIdem, func(s *settings) error {
		if d < 3*time.Millisecond {
			return fmt.Errorf("%v: at least 3ms", d)
		}
		s.params.Lease = d
		return nil
	})
}

// WithReplayWait makes a request whose key is in flight wait up to d for
// the first request to finish and then replay its answer, instead of
// InFlight at once. Never longer than the request's context. Idempotency
// guards only; not negative. The default is 0: no wait.
func WithReplayWait(d time.Duration) Option {
	return option("WithReplayWait", forIdem, func(s *settings) error {
		if d < 0 {
			return fmt.Errorf("%v: negative", d)
		}
		s.params.Wait = d
		return nil
	})
}

// WithFingerprint sets the fingerprint an idempotency guard writes into a
// new record. Whatever it writes, a guard honours a record of either
// fingerprint (a record written under the other one is matched against
// the request's fingerprint of that kind), so guards of both settings,
// and of earlier releases, share records. Idempotency guards only. The
// default is Fingerprint1, the fingerprint every release since v1.0
// reads, so that during a rolling deploy from one of them a retry is
// never answered 422 by an older process; set Fingerprint2 once no
// process older than this release shares the Redis. See
// docs/idempotency.md#fingerprints.
func WithFingerprint(f Fingerprint) Option {
	return option("WithFingerprint", forIdem, func(s *settings) error {
		if f != Fingerprint1 && f != Fingerprint2 {
			return fmt.Errorf("%d: not Fingerprint1 or Fingerprint2", f)
		}
		s.fingerprint = f
		return nil
	})
}

// WithMaxResponseBytes caps the stored answer (Answer.Payload); see
// WithOversizePolicy for a larger one. Idempotency guards only; not
// negative. The default is DefaultMaxResponseBytes (1 MiB).
func WithMaxResponseBytes(n int) Option {
	return option("WithMaxResponseBytes", forIdem, func(s *settings) error {
		if n < 0 {
			return fmt.Errorf("%d: negative", n)
		}
		s.maxRespBytes = n
		return nil
	})
}

// WithOversizePolicy sets what happens to an answer over
// WithMaxResponseBytes. Idempotency guards only. The default is
// OversizeKeepKey.
func WithOversizePolicy(p OversizePolicy) Option {
	return option("WithOversizePolicy", forIdem, func(s *settings) error {
		if p > OversizeReleaseKey {
			return fmt.Errorf("unknown policy %d", p)
		}
		s.oversize = p
		return nil
	})
}

// WithServerErrorPolicy sets whether server errors are stored.
// Idempotency guards only. The default is StoreServerErrors. Either way a
// server error or failure given after the request's context ended is not
// stored, and a panicking call frees the key.
func WithServerErrorPolicy(p ServerErrorPolicy) Option {
	return option("WithServerErrorPolicy", forIdem, func(s *settings) error {
		if p > ReleaseServerErrors {
			return fmt.Errorf("unknown policy %d", p)
		}
		s.serverErrors = p
		return nil
	})
}
