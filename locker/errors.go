package locker

import (
	"github.com/locktag/locktag/locker/internal/lockerr"
)

// Sentinel errors. Errors returned by this package wrap one or more of them;
// test with errors.Is. On cancellation the context's error is joined in, so
// errors.Is(err, context.DeadlineExceeded) works too.
var (
	// ErrNotObtained: the lock is held by someone else and the wait (if any)
	// ran out, or the caller's context ended first.
	ErrNotObtained = lockerr.ErrNotObtained
	// ErrNotHeld: the caller does not hold the lock (it expired, was lost, or
	// was already released). Nothing was changed in Redis.
	ErrNotHeld = lockerr.ErrNotHeld
	// ErrLockLost: a held lock stopped being held before it was released: its
	// renewal failed, or its lease ran out. A lease's context is cancelled with
	// this cause.
	ErrLockLost = lockerr.ErrLockLost
	// ErrClosed: the Locker was closed (Locker.Close, Locker.Shutdown).
	// Obtain returns it, and so does a wait that the shutdown ended; a
	// lease's context is cancelled with a cause that matches it and
	// ErrLockLost; Release of a lease the shutdown released returns an
	// error that matches it and ErrNotHeld.
	ErrClosed = lockerr.ErrClosed
	// ErrUnavailable: Redis could not be reached or answered with an error.
	// The lock state is unknown; callers must not assume they hold the lock.
	ErrUnavailable = lockerr.ErrUnavailable
	// ErrPoolExhausted: no connection could be taken from the client's pool.
	// Errors that match it also match ErrUnavailable. It is
	// driver.ErrPoolExhausted, the error drivers wrap.
	ErrPoolExhausted = lockerr.ErrPoolExhausted
	// ErrNotSent marks a call that never reached Redis (no connection or
	// call slot, or the context ended first): it changed nothing. It also
	// matches ErrUnavailable once returned. It is driver.ErrNotSent.
	ErrNotSent = lockerr.ErrNotSent
	// ErrBadOption is wrapped by New's and NewRedlock's error for an
	// invalid or inapplicable option (or driver option, driver.Validator),
	// named in the message. It is driver.ErrBadOption.
	ErrBadOption = lockerr.ErrBadOption
	// ErrIdempotencyUnsupported: Idempotent was called on a Locker whose
	// backend cannot keep idempotency records safely (a Redlock Locker).
	// See Locker.SupportsIdempotency.
	ErrIdempotencyUnsupported = lockerr.ErrIdempotencyUnsupported
	// ErrKindUnsupported: Obtain asked for a lock kind (Params.Limit) the
	// Locker's backend does not implement (a Redlock Locker). See
	// Locker.Supports.
	ErrKindUnsupported = lockerr.ErrKindUnsupported
	// ErrBadLimit: Obtain was called with a negative Params.Limit, or
	// with both Limit and a Mode.
	ErrBadLimit = lockerr.ErrBadLimit
	// ErrWriteInRead: a write Obtain whose context holds a read hold of the
	// same key. Refused at once: the writer would wait for its own reader.
	// It also matches ErrNotObtained.
	ErrWriteInRead = lockerr.ErrWriteInRead
	// ErrEmptyKey: Obtain was called with an empty key.
	ErrEmptyKey = lockerr.ErrEmptyKey
	// ErrNotReplicated: under WithReplicaAck, too few replicas acknowledged
	// an acquisition (released again by token) or a renewal in time. It
	// also matches ErrUnavailable.
	ErrNotReplicated = lockerr.ErrNotReplicated
	// ErrForceReleased: Locker.ForceRelease freed the lock while held; the
	// lease's context cause matches it and ErrLockLost and names the reason.
	ErrForceReleased = lockerr.ErrForceReleased
)

// ErrQuorum means that a Redlock operation did not reach a majority of the
// masters because some of them failed. Errors that match it are
// *QuorumError values and also match ErrUnavailable.
var ErrQuorum = lockerr.ErrQuorum

// ErrGrantExpired is wrapped by the error of an Obtain whose grant's reply came
// after its lease had ended (a slow reply, a paused process): the grant is
// released by token and the error also matches ErrNotObtained (try again),
// not ErrUnavailable. A queued waiter granted late queues again instead.
var ErrGrantExpired = lockerr.ErrGrantExpired

// ErrProtocol means that Redis holds a record this release cannot read:
// one written by a release of another protocol (docs/protocol.md), or by
// no locktag release at all. The script that met it changed nothing and
// refused the call; the error names the protocol found and the one this
// release reads (ProtocolVersion). It does not match ErrUnavailable:
// Redis answered, and retrying will not help until the releases sharing
// the Redis interoperate again (docs/versioning.md).
var ErrProtocol = lockerr.ErrProtocol

// ErrUnsupported means that the server, or the user the Locker logs in as,
// lacks scripting, pub/sub or a command the scripts call; Check (and the
// first Ping or Healthy) says what to allow. See docs/servers.md.
var ErrUnsupported = lockerr.ErrUnsupported

// ErrClockStep means that a reply carrying the Redis server's clock (a
// free lock's fencing token, a renewal's time) disagreed with the
// process's monotonic clock by more than WithClockStepTolerance: the
// server's clock was stepped, and tokens it mints next may be lower than
// earlier ones. A lease that meets it ends as lost, with a cause matching
// both ErrLockLost and ErrClockStep; an Obtain that meets it releases what
// it took and fails with an error matching ErrClockStep and
// ErrUnavailable, until the server's clock has caught up with where it
// was. See docs/production.md#redis-configuration.
var ErrClockStep = lockerr.ErrClockStep

// ErrEvictionPolicy means that Check found a Redis with a maxmemory whose
// maxmemory-policy is not noeviction: it may evict a held lock's key, and
// the lock would be granted again while its holder runs. It matches
// ErrUnsupported too; the error names the policy and what to set.
// WithEvictionAllowed accepts the risk instead.
var ErrEvictionPolicy = lockerr.ErrEvictionPolicy
