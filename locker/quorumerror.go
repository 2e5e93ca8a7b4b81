package locker

import (
	"context"
	"time"

	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/protocol"
	"github.com/locktag/locktag/locker/internal/quorum"
	"github.com/locktag/locktag/locker/internal/tally"
)

// QuorumError reports a Redlock operation that failed on too many masters
// for the answers left to decide it. It matches ErrQuorum and
// ErrUnavailable, and also ErrProtocol when the masters that refused the
// call because they hold a record of another protocol are enough on their
// own to deny the quorum: retrying does not help then, and the call is
// treated as a protocol refusal (never failed open). Each master's own
// error stays in Errs. See docs/scale-out.md#redlock.
type QuorumError struct {
	// Op is the operation: "obtain", "release", "keep", "extend", "ttl",
	// "inspect", "force-release".
	Op string
	// Need is the quorum: N/2+1 of N masters.
	Need int
	// OK is the count of masters that answered as hoped.
	OK int
	// Errs holds each master's error, in the order the masters were
	// given to NewRedlock; nil where the master answered.
	Errs []error
}

// Error names the operation, the count of masters that answered as hoped
// and each failing master's error.
func (e *QuorumError) Error() string { return (*tally.Error)(e).Error() }

// Unwrap makes a QuorumError match ErrQuorum and ErrUnavailable, and
// ErrProtocol when protocol refusals alone deny the quorum (see
// QuorumError).
func (e *QuorumError) Unwrap() []error { return (*tally.Error)(e).Unwrap() }

// quorumError returns err, with the engine's error of an undecided tally
// (*tally.Error, which the engine returns unwrapped) made a *QuorumError:
// every error of a Redlock call passes through it on its way up.
func quorumError(err error) error {
	if te, ok := err.(*tally.Error); ok {
		return (*QuorumError)(te) // the same fields: no copy
	}
	return err
}

// redlock is the Redlock backend as this package calls it: each method
// whose error may be an undecided tally's returns it as a *QuorumError.
// The others (Quorum, Handoff, Masters, Ping, ...) are the engine's own.
type redlock struct{ *quorum.Backend }

func (r redlock) Obtain(ctx context.Context, key string, n protocol.Names, token string, t backend.Terms) (backend.Held, error) {
	h, err := r.Backend.Obtain(ctx, key, n, token, t)
	return h, quorumError(err)
}

func (r redlock) Reenter(ctx context.Context, n protocol.Names, token string, ttl time.Duration) (int, bool, error) {
	holds, ok, err := r.Backend.Reenter(ctx, n, token, ttl)
	return holds, ok, quorumError(err)
}

func (r redlock) Extend(ctx context.Context, n protocol.Names, token string, ttl time.Duration) (bool, error) {
	ok, err := r.Backend.Extend(ctx, n, token, ttl)
	return ok, quorumError(err)
}

func (r redlock) Release(ctx context.Context, n protocol.Names, token string, ttl time.Duration) error {
	return quorumError(r.Backend.Release(ctx, n, token, ttl))
}

func (r redlock) Keep(ctx context.Context, n protocol.Names, token string, ttl, d time.Duration) error {
	return quorumError(r.Backend.Keep(ctx, n, token, ttl, d))
}

func (r redlock) PTTL(ctx context.Context, n protocol.Names, token string) (time.Duration, error) {
	d, err := r.Backend.PTTL(ctx, n, token)
	return d, quorumError(err)
}
