package locker

import (
	"context"
	"time"

	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/logs"
	"github.com/locktag/locktag/locker/internal/records"
)

// Idempotency sentinel errors; see also ErrUnavailable and ErrNotHeld.
var (
	// ErrInFlight: another execution holds the idempotency key and did not
	// finish within IdempotencyParams.Wait (or ctx ended: joined).
	ErrInFlight = lockerr.ErrInFlight
	// ErrMismatch: the idempotency key was first used with a different
	// fingerprint (another request body, path or method).
	ErrMismatch = lockerr.ErrMismatch
)

// DefaultIdempotencyTTL is how long a completed idempotency record is kept
// when IdempotencyParams.TTL is zero: 24 hours.
const DefaultIdempotencyTTL = 24 * time.Hour

// IdempotencyParams are the terms of one Idempotent call. The zero value
// keeps completed records for DefaultIdempotencyTTL, uses the Locker's
// watchdog lease for the in-flight marker and does not wait.
type IdempotencyParams struct {
	// TTL is how long a completed record is kept and replayed. After it, the
	// key is free and a request with it executes again. Zero means
	// DefaultIdempotencyTTL (24h).
	TTL time.Duration
	// Lease is the in-flight marker's lease, renewed every Lease/3 while
	// the Claim is held: it runs out only when its process dies or loses
	// Redis for a lease. Zero selects WithWatchdog's settings.
	Lease time.Duration
	// Wait is how long to wait, notified, never polling, for an in-flight
	// execution of the key to end, then replay it (or claim an abandoned
	// key). Zero fails at once with ErrInFlight; never longer than ctx.
	Wait time.Duration
	// Name is the low-cardinality name events carry (the route or full
	// method for the adapters); default "idempotency".
	Name string
}

// IdempotencyName returns the record name for a client key used on route
// (e.g. "POST /payments" or a gRPC full method) by the caller scope: a
// SHA-256 over the three, so user input cannot forge separators or hash
// tags, and the name is short whatever the key's length.
func IdempotencyName(route, scope, key string) string { return records.Name(route, scope, key) }

// Idempotent claims the idempotency record named name (see
// IdempotencyName) for a request summed up by fingerprint. No record: a
// held Claim — execute, then Complete or Abandon it. Completed with the
// same fingerprint: a Claim whose Replay returns the stored outcome (do
// not execute). Another fingerprint: ErrMismatch. In flight: ErrInFlight,
// or with p.Wait, wait and then replay or claim. ErrUnavailable: do not
// execute. Exactly one Claim per record is held at a time. A Redlock
// Locker returns ErrIdempotencyUnsupported (see SupportsIdempotency).
// See docs/idempotency.md#by-hand.
func (l *Locker) Idempotent(ctx context.Context, name, fingerprint string, p IdempotencyParams) (*Claim, error) {
	span := l.tel.startIdem(ctx, p.Name)
	c, err := l.idempotent(ctx, name, fingerprint, p)
	l.tel.endIdem(span, p.Name, c, err)
	if err != nil {
		l.protocolMet(ctx, err)
	}
	return c, err
}

// SupportsIdempotency returns nil when Idempotent can keep records on l,
// else an error matching ErrIdempotencyUnsupported saying why (a Redlock
// Locker: a record on one master could be lost in its failover). Guards
// call it when built, so a service refuses to start instead.
func (l *Locker) SupportsIdempotency() error {
	_, err := l.be.Records()
	return err
}

func (l *Locker) idempotent(ctx context.Context, name, fingerprint string, p IdempotencyParams) (*Claim, error) {
	nd, err := l.be.Records()
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, ErrEmptyKey
	}
	if err := ctx.Err(); err != nil {
		return nil, records.Failed(ctx, err)
	}
	st := records.New(nd)
	k := st.Keys(name)
	lease, every := p.Lease, p.Lease/3
	if lease <= 0 {
		lease, every = l.o.lease, l.o.renewEvery
	}
	r, err := records.Claim(ctx, st, k, records.Fingerprint(fingerprint), lease, p.Wait)
	if err != nil {
		return nil, err
	}
	if r.Replay() {
		return &Claim{replay: true, outcome: r.Outcome, ctx: ctx}, nil
	}
	ttl := p.TTL
	if ttl <= 0 {
		ttl = DefaultIdempotencyTTL
	}
	// The marker's lease counts from when the claiming call was sent.
	return l.newClaim(ctx, st, k, logs.ClaimName(p.Name), r.Token, ttl, lease, every, r.Sent), nil
}
