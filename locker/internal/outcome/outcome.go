// Package outcome names how a Locker call ended, for the Observer's events
// (ObtainEvent.Outcome ...) and lockotel's attribute locktag.outcome; the
// locker package re-exports the names as its Outcome* and Idempotency*
// constants.
package outcome

import (
	"context"
	"errors"

	"github.com/locktag/locktag/locker/internal/lockerr"
)

// The outcomes (see the locker constants of the same names).
const (
	Acquired    = "acquired"
	Reentered   = "reentered"
	Busy        = "busy"
	Canceled    = "canceled"
	Error       = "error"
	Lost        = "lost"
	Admitted    = "admitted"
	RateLimited = "rate_limited"
	Executed    = "executed"
	Replayed    = "replayed"
	Conflict    = "conflict"
	Mismatch    = "mismatch"
	Protocol    = "protocol"
)

func canceled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Obtain is an Obtain's outcome: holds is the hold count reached.
func Obtain(holds int, err error) string {
	switch {
	case err == nil && holds > 1:
		return Reentered
	case err == nil:
		return Acquired
	case canceled(err):
		return Canceled
	case errors.Is(err, lockerr.ErrNotObtained):
		return Busy
	case errors.Is(err, lockerr.ErrProtocol):
		return Protocol
	}
	return Error
}

// Idempotency is an Idempotent call's outcome: replay for a Claim that
// replays a stored outcome.
func Idempotency(replay bool, err error) string {
	switch {
	case err == nil && replay:
		return Replayed
	case err == nil:
		return Executed
	case errors.Is(err, lockerr.ErrMismatch):
		return Mismatch
	case canceled(err):
		return Canceled
	case errors.Is(err, lockerr.ErrInFlight):
		return Conflict
	case errors.Is(err, lockerr.ErrProtocol):
		return Protocol
	}
	return Error
}

// Rate is an Allow's outcome.
func Rate(err error) string {
	switch {
	case err == nil:
		return Admitted
	case canceled(err):
		return Canceled
	case errors.Is(err, lockerr.ErrRateLimited):
		return RateLimited
	case errors.Is(err, lockerr.ErrProtocol):
		return Protocol
	}
	return Error
}
