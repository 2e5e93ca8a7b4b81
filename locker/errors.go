package locker

import (
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/tally"
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
	// ErrUnavailable: Redis could not be reached or answered with an error.
	// The lock state is unknown; callers must not assume they hold the lock.
	ErrUnavailable = lockerr.ErrUnavailable
	// ErrPoolExhausted: no connection could be taken from the client's pool.
	// Errors that match it also match ErrUnavailable. It is
	// driver.ErrPoolExhausted, the error drivers wrap.
	ErrPoolExhausted = lockerr.ErrPoolExhausted
	// ErrNotSent marks an error of a call that never reached Redis (no
	// connection or call slot could be had, or the context ended before
	// anything was written): it changed nothing, and the locker sends no
	// clean-up for it. Errors that match it also match ErrUnavailable once
	// the locker returns them. It is driver.ErrNotSent, the error drivers
	// wrap.
	ErrNotSent = lockerr.ErrNotSent
	// ErrBadOption is wrapped by the error of New or NewRedlock when an
	// option (or a driver option, see driver.Validator) has an invalid value
	// or does not apply to the kind of Locker built; the message names the
	// option. It is driver.ErrBadOption.
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
	// ErrNotReplicated: under WithReplicaAck, fewer replicas than asked
	// acknowledged an acquisition (or a renewal) in time. An acquisition's
	// lock was released by token. Errors that match it also match
	// ErrUnavailable: the lock was free, but the deployment could not
	// make it safe against a failover.
	ErrNotReplicated = lockerr.ErrNotReplicated
	// ErrForceReleased: the lock was freed by Locker.ForceRelease while
	// held. A force-released lease's context is cancelled with a cause
	// that matches it and ErrLockLost, and whose message names the reason
	// ("locker: lock lost: force-released: <reason>").
	ErrForceReleased = lockerr.ErrForceReleased
)

// ErrQuorum: a Redlock operation did not reach a majority of the masters
// because some of them failed. Errors that match it are *QuorumError values
// and also match ErrUnavailable.
var ErrQuorum = lockerr.ErrQuorum

// QuorumError reports a Redlock operation that failed on too many masters:
// Op ("obtain", "release", "extend", "ttl" ...), Need (the quorum, N/2+1),
// OK (masters that answered as hoped) and Errs (per master, in the order
// given; nil where it answered). It matches ErrQuorum and ErrUnavailable.
type QuorumError = tally.QuorumError

// ErrLate is wrapped by the error of an Obtain whose lock was granted but
// whose lease had ended by the time the grant's reply reached this process
// (a reply slower than the lease, a paused process). Redis was healthy and
// the lock was simply not usable any more, so the error also matches
// ErrNotObtained (busy: try again), not ErrUnavailable. The grant is
// released by token. A queued waiter whose re-check is granted late
// queues again for the rest of its wait instead: only a first try, or a
// grant at the very end of the wait, fails with ErrLate.
var ErrLate = lockerr.ErrLate

// ErrUnsupported: the Redis server, or the user the Locker logs in as,
// lacks something the locker needs — Lua scripting (EVALSHA, EVAL),
// pub/sub (SUBSCRIBE), or a command its scripts call (TIME among them).
// Check, and the first Ping or Healthy, return it wrapped with what is
// missing and what to allow. See docs/servers.md.
var ErrUnsupported = lockerr.ErrUnsupported
