package locker

import (
	"context"
	"time"

	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/records"
)

// The states of an idempotency record (IdempotencyState.State).
const (
	// IdempotencyInFlight: an execution holds the record (a held Claim);
	// a call with the same name gets ErrInFlight, or waits.
	IdempotencyInFlight = "in flight"
	// IdempotencyDone: the execution completed and its outcome is
	// stored; a call with the same name and fingerprint replays it.
	IdempotencyDone = "done"
)

// IdempotencyState is what InspectIdempotency found for one record at one
// moment. A record stores no time of its own, so its age (when it was
// claimed or completed) cannot be read; only when it expires.
type IdempotencyState struct {
	// Name is the record's name, as given to Idempotent (the guards'
	// is IdempotencyName's) and as ListStored lists it.
	Name string
	// State is IdempotencyInFlight or IdempotencyDone.
	State string
	// Fingerprint is the SHA-256, in hex (64 digits), of the fingerprint
	// the record was claimed with: a call with another fingerprint gets
	// ErrMismatch.
	Fingerprint string
	// Owner is the in-flight Claim's owner token (random, one per
	// claim), as Inspect shows a lock holder's; "" when done.
	Owner string
	// ExpiresIn is the time until Redis drops the record. In flight it
	// is the lease left, which the Claim renews every third of its lease
	// (so it runs out only when the executing process stopped); done, it
	// is what is left of the record's TTL, after which the name executes
	// again. Zero for a key without an expiry, which locktag never
	// writes.
	ExpiresIn time.Duration
	// Waiting is the callers registered as waiting for the in-flight
	// record to end (IdempotencyParams.Wait); 0 when done. It is an upper
	// bound: a caller that stopped waiting early stays counted until the
	// record ends or the longest wait registered is over.
	Waiting int
}

// InspectIdempotency reads the idempotency record named name (as given to
// Idempotent, and as ListStored lists it), for operators, in one read-only
// script: it claims nothing, changes nothing, and never returns a done
// record's stored outcome. No record (never claimed, abandoned, or
// expired) returns ok false. Errors: ErrUnavailable when Redis failed,
// ErrEmptyKey, ErrProtocol for a record of another protocol (left as it
// is), and ErrIdempotencyUnsupported on a Redlock Locker, which keeps no
// records (see SupportsIdempotency).
func (l *Locker) InspectIdempotency(ctx context.Context, name string) (st IdempotencyState, ok bool, err error) {
	nd, err := l.be.Records()
	if err != nil {
		return IdempotencyState{}, false, err
	}
	if name == "" {
		return IdempotencyState{}, false, ErrEmptyKey
	}
	rs := records.New(nd)
	v, ok, err := rs.Inspect(ctx, rs.Keys(name))
	if err != nil {
		return IdempotencyState{}, false, lockerr.Unavailable(err)
	}
	if !ok {
		return IdempotencyState{}, false, nil
	}
	st = IdempotencyState{Name: name, State: IdempotencyDone, Fingerprint: v.Fingerprint, Owner: v.Owner,
		ExpiresIn: v.PTTL, Waiting: v.Waiting}
	if v.InFlight {
		st.State = IdempotencyInFlight
	}
	return st, true, nil
}
