package guard

import (
	"errors"
)

// Sentinel errors. Construction errors wrap locker.ErrBadOption, ErrNilLocker or
// ErrNoScope (or are a *keyexpr.TagError for a bad tag); the errors in an
// Outcome wrap locker's sentinels, keyexpr's, or the request-time ones here.
var (
	// ErrNilLocker reports a constructor called with a nil *locker.Locker.
	ErrNilLocker = errors.New("guard: nil locker")
	// ErrBadIdempotencyKey: a client's idempotency key is empty, too long
	// or not printable ASCII (see ParseIdempotencyKey).
	ErrBadIdempotencyKey = errors.New("guard: malformed idempotency key")
	// ErrNoScope reports an idempotency guard built with neither WithScope
	// nor WithPublicScope.
	ErrNoScope = errors.New("guard: idempotency guard without a scope (use WithScope or WithPublicScope)")

	// ErrTagMistake is wrapped by a key source's error when the template asks
	// for something this request can never have — a path parameter the route
	// lacks. The Outcome is TagMistake: a server error, never the client's.
	ErrTagMistake = errors.New("guard: the tag names something the request cannot have")
	// ErrUnsuccessful is returned (or wrapped) by a lock guard's call whose
	// answer is out but is not a success — an HTTP status outside 2xx. Run
	// treats it as an answer (the Outcome is OK, as for nil), but a `keep`
	// tag keeps the lock only after a success: nil from the call.
	ErrUnsuccessful = errors.New("guard: the call answered without success")
	// ErrTooLarge is wrapped by an adapter's error for a request body over
	// the cap (WithMaxRequestBytes). The Outcome is TooLarge.
	ErrTooLarge = errors.New("guard: request too large")
	// ErrIdempotencyKeyMissing: a guarded request without an idempotency key.
	ErrIdempotencyKeyMissing = errors.New("guard: idempotency key missing")
	// ErrScopeUnresolved: the scope resolver failed or returned "".
	ErrScopeUnresolved = errors.New("guard: idempotency scope unresolved")
	// ErrResponseNotStored: the key's first request finished, but its answer
	// was over WithMaxResponseBytes and was not stored (OversizeKeepKey).
	ErrResponseNotStored = errors.New("guard: idempotent answer too large to replay")
	// ErrUnreadableRecord: a stored idempotency record is not in this
	// guard's format (written by another adapter or a newer version).
	ErrUnreadableRecord = errors.New("guard: unreadable idempotency record")
	// ErrReleaseFailed is wrapped, with the guard's name and the cause, by
	// Outcome.Err when the call answered and then the release failed: the
	// lock's release (it stays held until its lease runs out), or an
	// idempotency claim's storing or freeing of its record (it stays in
	// flight until its lease runs out). The Outcome is still OK: the answer
	// is out; adapters log the error.
	ErrReleaseFailed = errors.New("guard: release failed")
)

// The HTTP adapters' errors, shared by all of them so that errors.Is
// matches whichever adapter returned one: each adapter re-exports them
// under its own names (middleware.ErrBodyTooLarge, stdhttp.ErrBodyTooLarge
// ...).
var (
	// ErrBadRule reports a lock rule or a route check that found a tag
	// naming a path parameter its route lacks, or a rule for no route.
	ErrBadRule = errors.New("guard: bad rule")
	// ErrBodyTooLarge reports a request body over the cap a {body...}
	// placeholder reads (WithMaxRequestBytes); it also matches ErrTooLarge.
	ErrBodyTooLarge error = &alsoMatches{"guard: request body too large", ErrTooLarge}
	// ErrBodyNotJSON reports a {body...} placeholder on a body that is not
	// valid JSON.
	ErrBodyNotJSON = errors.New("guard: request body is not valid JSON")
	// ErrBodyNotScalar reports a {body...} placeholder whose field is not a
	// string, number or boolean.
	ErrBodyNotScalar = errors.New("guard: body field is not a string, number or boolean")
	// ErrNoRouteParam reports, at request time, a {path.X} placeholder the
	// route lacks; it also matches ErrTagMistake.
	ErrNoRouteParam error = &alsoMatches{"guard: the route has no such path parameter", ErrTagMistake}
)

// alsoMatches is a sentinel that also matches a more general one, so the
// guard classifies it by that.
type alsoMatches struct {
	msg     string
	general error
}

func (e *alsoMatches) Error() string { return e.msg }
func (e *alsoMatches) Unwrap() error { return e.general }
