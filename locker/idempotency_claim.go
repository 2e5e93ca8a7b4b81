package locker

import (
	"context"
	"time"

	"github.com/locktag/locktag/locker/internal/keeper"
	"github.com/locktag/locktag/locker/internal/logs"
	"github.com/locktag/locktag/locker/internal/records"
)

// Claim is what Idempotent returns: either a stored outcome to replay
// (Replay reports true; nothing is held) or the right to execute, which
// must end with Complete or Abandon. While it is held, the in-flight
// marker's lease is renewed in the background.
//
// A Claim is safe for concurrent use.
type Claim struct {
	l       *Locker
	st      *records.Store // where the record lives
	k       records.Keys
	name    string    // IdempotencyParams.Name, for logs
	since   time.Time // when the claim was sent
	token   string
	ttl     time.Duration
	outcome []byte
	replay  bool
	ctx     context.Context
	cancel  context.CancelCauseFunc

	kp    keeper.Keeper // the renewal engine; its Mu guards ended and lost
	lease time.Duration // the in-flight marker's lease
	ended bool          // Complete or Abandon called
	lost  bool
}

func (l *Locker) newClaim(ctx context.Context, st *records.Store, k records.Keys, name, token string, ttl, lease, every time.Duration, sent time.Time) *Claim {
	c := &Claim{l: l, st: st, k: k, name: name, since: sent, token: token, ttl: ttl, lease: lease}
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	c.kp.Start((*claimOwner)(c), sent.Add(lease), every, every, keeper.RetryAfter(every), false)
	return c
}

// Replay returns the outcome stored by an earlier execution and true if
// this Claim is a replay; the caller must then not execute. For a held
// Claim it returns nil and false.
func (c *Claim) Replay() ([]byte, bool) { return c.outcome, c.replay }

// Context returns the context to execute with: for a held Claim it is
// cancelled with cause ErrLockLost if the in-flight marker is lost (its
// renewal was refused, or not confirmed before the lease ran out), and with
// cause ErrNotHeld after Complete or Abandon. For a replay it is the
// context given to Idempotent.
func (c *Claim) Context() context.Context { return c.ctx }

// Lost reports whether the in-flight marker was lost before the Claim
// ended. Another caller may then have claimed the key.
func (c *Claim) Lost() bool {
	c.kp.Mu.Lock()
	defer c.kp.Mu.Unlock()
	return c.lost
}

// Complete stores outcome as the record's result for the TTL and wakes
// waiting callers, who replay it. It ignores ctx's cancellation (the request
// may be over) and is bounded by the call timeout. It returns ErrNotHeld,
// storing nothing, if the Claim is a replay, already ended, or no longer
// owns the record (its lease ran out and it expired or was claimed again);
// an error matching ErrUnavailable if Redis failed — the record then stays
// in flight until its lease runs out, and a retry after that executes again.
func (c *Claim) Complete(ctx context.Context, outcome []byte) error {
	return c.end(ctx, records.Complete, outcome)
}

// Abandon deletes the in-flight record so that a retry executes, and wakes
// waiting callers (one of them claims it). Call it when the execution did
// not happen or failed in a way that must not be replayed, and on panic;
// after Complete it is a no-op returning ErrNotHeld, so it can be deferred.
func (c *Claim) Abandon(ctx context.Context) error {
	return c.end(ctx, records.Abandon, nil)
}

func (c *Claim) end(ctx context.Context, mode string, outcome []byte) error {
	if c.replay {
		return ErrNotHeld
	}
	c.kp.Mu.Lock()
	if c.ended {
		c.kp.Mu.Unlock()
		return ErrNotHeld
	}
	c.ended = true
	c.kp.StopLocked()
	c.kp.Mu.Unlock()
	defer c.cancel(ErrNotHeld)

	// Like a lock's release, with priority: an exhausted pool must not
	// leave the record in flight.
	err := c.st.End(ctx, c.k, c.token, mode, outcome, c.ttl)
	if err != nil {
		c.kp.Mu.Lock()
		lost := c.lost
		c.kp.Mu.Unlock()
		c.l.log.ClaimEnd(ctx, c.logClaim(), mode, lost, err)
	}
	return err
}

// logClaim is what c's log records say of it.
func (c *Claim) logClaim() logs.Claim {
	return logs.Claim{Name: c.name, Record: c.k.Record(), Since: c.since}
}

// lose marks the marker lost, logs why and cancels the Claim's context.
func (c *Claim) lose(why keeper.Loss, lastErr error) {
	c.kp.Mu.Lock()
	defer c.kp.Mu.Unlock()
	if c.ended || c.lost {
		return
	}
	c.lost = true
	c.kp.StopLocked()
	// Logged before the cancellation, so whoever sees the context end finds
	// the record written (as for a lock).
	c.l.log.ClaimLost(c.logClaim(), why, lastErr)
	// Cancelled before Lost can report true, so a caller that saw Lost
	// finds the context's cause set.
	c.cancel(ErrLockLost)
}

// claimOwner is a Claim as its keeper's Owner (see leaseOwner).
type claimOwner Claim

func (o *claimOwner) RenewTTL() time.Duration { return o.lease }
func (o *claimOwner) ExtendLease(ctx context.Context, ttl time.Duration) (bool, error) {
	return o.st.Renew(ctx, o.k, o.token, ttl)
}

// ValidUntil: records live on one node; no drift allowance.
func (o *claimOwner) ValidUntil(sent time.Time, ttl time.Duration) time.Time { return sent.Add(ttl) }
func (o *claimOwner) Renewed(bool, error)                                    {}
func (o *claimOwner) Lose(why keeper.Loss, lastErr error)                    { (*Claim)(o).lose(why, lastErr) }
