// Package lockerr defines the locker's sentinel errors once, and the error
// values the engine builds from them. Package locker re-exports every
// sentinel (locker.ErrNotObtained is lockerr.ErrNotObtained), so errors.Is
// matches either name and messages keep the "locker:" prefix; the
// sentinels' contracts are documented there.
package lockerr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/locktag/locktag/locker/driver"
)

// The sentinels (documented at their locker names).
var (
	ErrNotObtained            = errors.New("locker: not obtained")
	ErrNotHeld                = errors.New("locker: not held")
	ErrLockLost               = errors.New("locker: lock lost")
	ErrClosed                 = errors.New("locker: closed")
	ErrUnavailable            = errors.New("locker: redis unavailable")
	ErrPoolExhausted          = driver.ErrPoolExhausted
	ErrNotSent                = driver.ErrNotSent
	ErrBadOption              = driver.ErrBadOption
	ErrIdempotencyUnsupported = errors.New("locker: idempotency not supported by this backend")
	ErrKindUnsupported        = errors.New("locker: lock kind not supported by this backend")
	ErrBadLimit               = errors.New("locker: bad limit")
	ErrWriteInRead            = errors.New("locker: write lock requested inside a read lock of the same key")
	ErrEmptyKey               = errors.New("locker: empty key")
	ErrNotReplicated          = errors.New("locker: not acknowledged by replicas")
	ErrForceReleased          = errors.New("locker: force-released")
	ErrQuorum                 = errors.New("locker: quorum not reached")
	ErrGrantExpired           = errors.New("locker: granted, but the lease ended before the reply arrived")
	ErrUnsupported            = errors.New("locker: server lacks what the locker needs")
	ErrInFlight               = errors.New("locker: idempotency key in flight")
	ErrMismatch               = errors.New("locker: idempotency key reused with a different request")
	ErrTooManyKeys            = errors.New("locker: too many keys")
	ErrRateLimited            = errors.New("locker: rate limited")
	ErrBadRate                = errors.New("locker: bad rate")
	ErrStaleToken             = errors.New("locker: stale fencing token")
	ErrNotClaimed             = errors.New("locker: resource not claimed by this fencing token")
	ErrProtocol               = errors.New("locker: record of another protocol")
	ErrEvictionPolicy         = fmt.Errorf("%w: its maxmemory-policy may evict a held lock", ErrUnsupported)
	ErrClockStep              = errors.New("locker: the redis server's clock stepped")
)

// Protocol is the error of a script that met a record it cannot read: one
// another protocol wrote (Found is its version), or none did (Found is
// "unknown"). The script changed nothing. It matches ErrProtocol only:
// Redis answered, and retrying cannot help.
type Protocol struct {
	Found, Supported string
}

func (e *Protocol) Error() string {
	return fmt.Sprintf("%s: Redis holds a record of protocol %s, this release reads protocol %s (docs/versioning.md)", ErrProtocol.Error(), e.Found, e.Supported)
}

// Unwrap makes a Protocol match ErrProtocol.
func (e *Protocol) Unwrap() error { return ErrProtocol }

// protocolReply is the start of a script's refusal (refuse in fence.lua).
const protocolReply = "LOCKTAG_PROTOCOL "

// AsProtocol returns the Protocol error err carries, if it is or wraps a
// script's refusal ("LOCKTAG_PROTOCOL found supported ...", whatever the
// driver's error type), else nil.
func AsProtocol(err error) *Protocol {
	if err == nil {
		return nil
	}
	var p *Protocol
	if errors.As(err, &p) {
		return p
	}
	msg := err.Error()
	i := strings.Index(msg, protocolReply)
	if i < 0 {
		return nil
	}
	f := strings.Fields(msg[i+len(protocolReply):])
	if len(f) < 2 {
		return nil
	}
	return &Protocol{Found: f[0], Supported: f[1]}
}

// GrantExpired is the error of a late grant: it matches ErrGrantExpired and ErrNotObtained.
var GrantExpired error = &Multi{Msg: ErrGrantExpired.Error(), Errs: []error{ErrGrantExpired, ErrNotObtained}}

// Forced is the cause a force-released lease ends with: it matches
// ErrLockLost and ErrForceReleased, and names the reason.
type Forced struct{ Reason string }

func (e *Forced) Error() string {
	return ErrLockLost.Error() + ": force-released: " + e.Reason
}

// Unwrap makes a Forced match ErrLockLost and ErrForceReleased.
func (e *Forced) Unwrap() []error { return []error{ErrLockLost, ErrForceReleased} }

// Unavailable wraps a Redis failure so it matches ErrUnavailable; a
// script's refusal of a record of another protocol becomes a Protocol
// error instead (AsProtocol).
func Unavailable(err error) error {
	if p := AsProtocol(err); p != nil {
		return p
	}
	switch {
	case errors.Is(err, ErrUnavailable):
		return err
	case errors.Is(err, ErrPoolExhausted):
		return &Multi{Msg: err.Error(), Errs: []error{ErrUnavailable, err}}
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// Multi matches several sentinels under one message.
type Multi struct {
	Msg  string
	Errs []error
}

func (e *Multi) Error() string { return e.Msg }

// Unwrap returns the errors e matches.
func (e *Multi) Unwrap() []error { return e.Errs }

// ObtainFailed turns a failed Redis call during Obtain into the error the
// caller sees: the context's error when the context ended, else
// Unavailable.
func ObtainFailed(ctx context.Context, err error) error {
	if ce := ctx.Err(); ce != nil {
		return errors.Join(ErrNotObtained, ce)
	}
	// A network deadline taken from ctx can fire just before ctx's own timer.
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return errors.Join(ErrNotObtained, context.DeadlineExceeded)
	}
	return Unavailable(err)
}

// NotSent marks err as the failure of a call that was never sent.
func NotSent(err error) error {
	if errors.Is(err, ErrNotSent) {
		return err
	}
	return &Multi{Msg: ErrNotSent.Error() + ": " + err.Error(), Errs: []error{ErrNotSent, err}}
}

// NotReplicated is the error of a call whose WAIT counted Acked of Want
// replicas within Timeout: it matches ErrNotReplicated and ErrUnavailable.
type NotReplicated struct {
	Acked, Want int
	Timeout     time.Duration
}

func (e *NotReplicated) Error() string {
	return fmt.Sprintf("%s: %d of %d replicas within %v", ErrNotReplicated.Error(), e.Acked, e.Want, e.Timeout)
}

// Unwrap makes a NotReplicated match ErrNotReplicated and ErrUnavailable.
func (e *NotReplicated) Unwrap() []error { return []error{ErrNotReplicated, ErrUnavailable} }
