package locker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locktag/locktag/locker/driver"
)

// Sentinel errors. Errors returned by this package wrap one or more of them;
// test with errors.Is. On cancellation the context's error is joined in, so
// errors.Is(err, context.DeadlineExceeded) works too.
var (
	// ErrNotObtained: the lock is held by someone else and the wait (if any)
	// ran out, or the caller's context ended first.
	ErrNotObtained = errors.New("locker: not obtained")
	// ErrNotHeld: the caller does not hold the lock (it expired, was lost, or
	// was already released). Nothing was changed in Redis.
	ErrNotHeld = errors.New("locker: not held")
	// ErrLockLost: a held lock stopped being held before it was released: its
	// renewal failed, or its lease ran out. A lease's context is cancelled with
	// this cause.
	ErrLockLost = errors.New("locker: lock lost")
	// ErrUnavailable: Redis could not be reached or answered with an error.
	// The lock state is unknown; callers must not assume they hold the lock.
	ErrUnavailable = errors.New("locker: redis unavailable")
	// ErrPoolExhausted: no connection could be taken from the client's pool.
	// Errors that match it also match ErrUnavailable. It is
	// driver.ErrPoolExhausted, the error drivers wrap.
	ErrPoolExhausted = driver.ErrPoolExhausted
	// ErrNotSent marks an error of a call that never reached Redis (no
	// connection or call slot could be had, or the context ended before
	// anything was written): it changed nothing, and the locker sends no
	// clean-up for it. Errors that match it also match ErrUnavailable once
	// the locker returns them. It is driver.ErrNotSent, the error drivers
	// wrap.
	ErrNotSent = driver.ErrNotSent
	// ErrBadOption is wrapped by the error of New or NewRedlock when an
	// option (or a driver option, see driver.Validator) has an invalid value
	// or does not apply to the kind of Locker built; the message names the
	// option. It is driver.ErrBadOption.
	ErrBadOption = driver.ErrBadOption
	// ErrIdempotencyUnsupported: Idempotent was called on a Locker whose
	// backend cannot keep idempotency records safely (a Redlock Locker).
	// See Locker.SupportsIdempotency.
	ErrIdempotencyUnsupported = errors.New("locker: idempotency not supported by this backend")
	// ErrKindUnsupported: Obtain asked for a lock kind (Params.Limit) the
	// Locker's backend does not implement (a Redlock Locker). See
	// Locker.Supports.
	ErrKindUnsupported = errors.New("locker: lock kind not supported by this backend")
	// ErrBadLimit: Obtain was called with a negative Params.Limit, or
	// with both Limit and a Mode.
	ErrBadLimit = errors.New("locker: bad limit")
	// ErrWriteInRead: a write Obtain whose context holds a read hold of the
	// same key. Refused at once: the writer would wait for its own reader.
	// It also matches ErrNotObtained.
	ErrWriteInRead = errors.New("locker: write lock requested inside a read lock of the same key")
	// ErrEmptyKey: Obtain was called with an empty key.
	ErrEmptyKey = errors.New("locker: empty key")
	// ErrNotReplicated: under WithReplicaAck, fewer replicas than asked
	// acknowledged an acquisition (or a renewal) in time. An acquisition's
	// lock was released by token. Errors that match it also match
	// ErrUnavailable: the lock was free, but the deployment could not
	// make it safe against a failover.
	ErrNotReplicated = errors.New("locker: not acknowledged by replicas")
	// ErrForceReleased: the lock was freed by Locker.ForceRelease while
	// held. A force-released lease's context is cancelled with a cause
	// that matches it and ErrLockLost, and whose message names the reason
	// ("locker: lock lost: force-released: <reason>").
	ErrForceReleased = errors.New("locker: force-released")
)

// forcedError is the cause a force-released lease ends with.
type forcedError struct{ reason string }

func (e *forcedError) Error() string {
	return ErrLockLost.Error() + ": force-released: " + e.reason
}

func (e *forcedError) Unwrap() []error { return []error{ErrLockLost, ErrForceReleased} }

// unavailable wraps a Redis failure so it matches ErrUnavailable.
func unavailable(err error) error {
	switch {
	case errors.Is(err, ErrUnavailable):
		return err
	case errors.Is(err, ErrPoolExhausted):
		return &multiError{msg: err.Error(), errs: []error{ErrUnavailable, err}}
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// multiError matches several sentinels under one message.
type multiError struct {
	msg  string
	errs []error
}

func (e *multiError) Error() string   { return e.msg }
func (e *multiError) Unwrap() []error { return e.errs }

// obtainFailed turns a failed Redis call during Obtain into the error the
// caller sees: the context's error when the context ended, else unavailable.
func obtainFailed(ctx context.Context, err error) error {
	if ce := ctx.Err(); ce != nil {
		return errors.Join(ErrNotObtained, ce)
	}
	// A network deadline taken from ctx can fire just before ctx's own timer.
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return errors.Join(ErrNotObtained, context.DeadlineExceeded)
	}
	return unavailable(err)
}

// notSent marks err as the failure of a call that was never sent.
func notSent(err error) error {
	if errors.Is(err, ErrNotSent) {
		return err
	}
	return &multiError{msg: ErrNotSent.Error() + ": " + err.Error(), errs: []error{ErrNotSent, err}}
}

// notReplicatedError is the error of a call whose WAIT counted acked of
// want replicas within timeout.
type notReplicatedError struct {
	acked, want int
	timeout     time.Duration
}

func (e *notReplicatedError) Error() string {
	return fmt.Sprintf("%s: %d of %d replicas within %v", ErrNotReplicated.Error(), e.acked, e.want, e.timeout)
}

func (e *notReplicatedError) Unwrap() []error { return []error{ErrNotReplicated, ErrUnavailable} }
