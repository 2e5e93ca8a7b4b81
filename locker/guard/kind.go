package guard

import (
	"context"
	"errors"
	"time"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
)

// Kind says how a guarded request ended. A guard reports kinds; only an
// adapter turns them into statuses (see docs/architecture.md).
type Kind uint8

// The kinds. For each, what happened; "the call" is the adapter's function
// (the handler and whatever runs after the guard).
const (
	// OK: the call ran under the guard (lock held, or idempotency key
	// claimed or not required); its own answer stands. Outcome.Err may
	// still report something for the log, such as a lock lost after the
	// answer was sent, or a record that could not be stored.
	OK Kind = iota
	// FailedOpen: Redis was unavailable and the lock guard was built
	// WithFailOpen, so the call ran without the lock. FailOpenCause(ctx)
	// returns the error inside the call.
	FailedOpen
	// Replay: the idempotency key's first request is done; Outcome.Record
	// holds its stored answer, to be sent again. The call did not run.
	Replay
	// BadKey: a lock key value is missing, empty or too long, or a key
	// source failed for this request. A client error.
	BadKey
	// TooLarge: the request body is over the cap the guard reads
	// (WithMaxRequestBytes). A client error.
	TooLarge
	// TagMistake: the tag names something this request can never have,
	// such as a path parameter its route lacks. A server error; the guard
	// logs it with the tag and the guard's name.
	TagMistake
	// Busy: the lock stayed held by another request for the whole wait
	// (including a grant that arrived too late, locker.ErrGrantExpired).
	Busy
	// Unavailable: Redis could not be reached, failed, or the pool was
	// exhausted; nothing is known to be held. Also a record of another
	// protocol (locker.ErrProtocol, in Outcome.Err): Redis answered but
	// holds what this release cannot read, and refused the request
	// unchanged; the guard's log says so in words of its own.
	Unavailable
	// Deadline: the request's deadline passed while it waited.
	Deadline
	// Canceled: the request was cancelled while it waited.
	Canceled
	// Lost: the lock or the idempotency claim was lost while the call ran,
	// and the call gave no answer (it failed, or wrote nothing).
	Lost
	// MissingIdempotencyKey: a request without the idempotency key, on a
	// guard that requires it.
	MissingIdempotencyKey
	// BadIdempotencyKey: the idempotency key is malformed, too long, or
	// sent more than once.
	BadIdempotencyKey
	// NoScope: the caller's scope could not be resolved.
	NoScope
	// InFlight: a request with the same idempotency key is running.
	InFlight
	// Mismatch: the idempotency key was used with a different request.
	Mismatch
	// NotStored: the key's first request is done, but its answer was too
	// large to store; Outcome.Record.Status is its status.
	NotStored
	// Internal: anything else (an unreadable record, an unexpected error).
	Internal
	// LimitFull: every permit of a concurrency limit (a `limit` tag) stayed
	// taken by other requests for the whole wait. Like Busy, a retry later
	// may succeed; adapters answer it as "too many requests".
	LimitFull
	// RateLimited: a rate tag's key used up its rate, and no slot came
	// within the wait. Outcome.RetryAfter is the exact time to the next
	// slot and Outcome.Quota the limit's state; adapters answer it as
	// "too many requests" with both.
	RateLimited
)

var kindNames = [...]string{
	"ok", "failed open", "replay", "bad key", "too large", "tag mistake", "busy",
	"unavailable", "deadline", "canceled", "lost", "missing idempotency key",
	"bad idempotency key", "no scope", "in flight", "mismatch", "not stored", "internal",
	"limit full", "rate limited",
}

// String returns a short lower-case name, such as "busy".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Ran reports whether the call ran: OK or FailedOpen.
func (k Kind) Ran() bool { return k == OK || k == FailedOpen }

// Outcome is what Run reports for one request.
type Outcome struct {
	// Kind says what happened.
	Kind Kind
	// Err is the cause. It may contain the resolved key or a Redis
	// address: log it, never send it to a client.
	Err error
	// RetryAfter is a hint for the client for Busy and LimitFull (the tag's
	// wait rounded up to whole seconds, at least 1s, or WithRetryAfter),
	// RateLimited (the time to the rate's next slot, exact), Unavailable
	// and InFlight (1s); zero otherwise. Retry gives the hint to send,
	// with the default for the other retryable kinds.
	RetryAfter time.Duration
	// Name is the guard's low-cardinality name: the tag's name field, or
	// the route or method the adapter gave.
	Name string
	// Tag is the lock guard's tag; "" for an idempotency guard.
	Tag string
	// Idempotency is true when an idempotency guard reported the outcome.
	Idempotency bool
	// Record is the stored answer for Replay, and for NotStored (Status
	// only); nil otherwise.
	Record *Record
	// Quota is a rate tag's limit and its state after this request's
	// decision (OK, RateLimited), for the adapters' rate-limit fields;
	// nil for other tags and when no decision was made.
	Quota *Quota
}

// Record is an answer stored by an idempotency guard: the adapter's status
// (an HTTP status, a gRPC code) and the adapter's encoding of the rest.
type Record struct {
	Status  int
	Payload []byte
}

// hint is the retry hint for kinds that have one.
const hint = time.Second

// Retry is the retry hint a client gets with o: o.RetryAfter when the
// guard gave one (Busy and LimitFull: the tag's wait or WithRetryAfter;
// RateLimited: the time to the next slot),
// else 1s for every other refusal the client may send again as it is
// (Unavailable, InFlight, Lost, Deadline, Canceled), else zero. The
// adapters send it as Retry-After or google.rpc.RetryInfo, so every 503
// and every retryable RPC code says when to try again, decided here once.
func (o Outcome) Retry() time.Duration {
	if o.RetryAfter > 0 {
		return o.RetryAfter
	}
	switch o.Kind {
	case Busy, LimitFull, RateLimited, Unavailable, InFlight, Lost, Deadline, Canceled:
		return hint
	}
	return 0
}

// classify sorts an error from Key.Eval or Locker.Obtain into a Kind.
func classify(err error) Kind {
	var te *keyexpr.TemplateError
	switch {
	case errors.Is(err, ErrTagMistake):
		return TagMistake
	case errors.Is(err, ErrTooLarge):
		return TooLarge
	case errors.As(err, &te):
		return BadKey
	case errors.Is(err, locker.ErrUnavailable), errors.Is(err, locker.ErrPoolExhausted), errors.Is(err, locker.ErrClosed), errors.Is(err, locker.ErrProtocol):
		return Unavailable
	case errors.Is(err, context.DeadlineExceeded):
		return Deadline
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, locker.ErrLockLost):
		return Lost // a nested lock whose outer hold was lost
	case errors.Is(err, locker.ErrNotObtained), errors.Is(err, locker.ErrGrantExpired):
		return Busy
	case errors.Is(err, locker.ErrRateLimited):
		return RateLimited
	}
	return Internal
}

// classifyIdem sorts an error from Locker.Idempotent into a Kind.
func classifyIdem(err error) Kind {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Deadline
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, locker.ErrInFlight):
		return InFlight
	case errors.Is(err, locker.ErrMismatch):
		return Mismatch
	case errors.Is(err, locker.ErrUnavailable), errors.Is(err, locker.ErrClosed), errors.Is(err, locker.ErrProtocol):
		return Unavailable
	}
	return Internal
}
