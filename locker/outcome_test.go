package locker

import (
	"context"
	"errors"
	"testing"
)

// TestOutcomes: the outcome an event reports for each way a call ends; a
// cancelled wait is canceled though it also matches ErrNotObtained.
func TestOutcomes(t *testing.T) {
	quorum := &QuorumError{Op: "obtain", Need: 2, OK: 1, Errs: []error{ErrProtocol, nil, ErrProtocol}}
	for _, c := range []struct{ got, want string }{
		{obtainOutcome(1, nil), OutcomeAcquired},
		{obtainOutcome(2, nil), OutcomeReentered},
		{obtainOutcome(0, errors.Join(ErrNotObtained, context.Canceled)), OutcomeCanceled},
		{obtainOutcome(0, ErrNotObtained), OutcomeBusy},
		{obtainOutcome(0, quorum), OutcomeProtocol},
		{obtainOutcome(0, ErrUnavailable), OutcomeError},
		{idempotencyOutcome(true, nil), IdempotencyReplayed},
		{idempotencyOutcome(false, nil), IdempotencyExecuted},
		{idempotencyOutcome(false, ErrMismatch), IdempotencyMismatch},
		{idempotencyOutcome(false, ErrInFlight), IdempotencyConflict},
		{idempotencyOutcome(false, context.DeadlineExceeded), OutcomeCanceled},
		{rateOutcome(nil), OutcomeAdmitted},
		{rateOutcome(ErrRateLimited), OutcomeRateLimited},
		{rateOutcome(ErrProtocol), OutcomeProtocol},
		{rateOutcome(ErrUnavailable), OutcomeError},
	} {
		if c.got != c.want {
			t.Errorf("outcome %q, want %q", c.got, c.want)
		}
	}
}
