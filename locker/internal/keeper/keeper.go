// Package keeper is the one renewal engine of a lease in Redis: a lock's
// (locker.Lease) and an idempotency claim's in-flight marker
// (locker.Claim). The owner implements Owner; the Keeper keeps its timers
// and calls back. It imports only the driver seam.
//
// A Keeper keeps two timers:
//
//   - expiry, at the local, conservative end of the lease (computed from
//     the time the last successful renewal was sent): when it fires the
//     lease is lost;
//   - renewal, which extends the lease in Redis: first after the delay
//     given to start, then every every (0: no further renewals).
//
// A renewal refused by Redis (the lease is gone or owned by another) loses
// the lease at once; a failed call is retried every retry until the expiry
// timer ends it. A renewal never re-acquires. Renewals run with priority
// (driver.WithPriority), so an exhausted pool cannot starve them: a lock
// and a claim survive the same conditions.
package keeper

import (
	"context"
	"sync"
	"time"

	"github.com/locktag/locktag/locker/driver"
)

// Keeper is the renewal engine of one lease (see the package
// documentation for its two timers). Mu also guards the owner's own
// fields where its comments say so.
type Keeper struct {
	Mu       sync.Mutex
	owner    Owner
	stopped  bool          // lost or ended: no more renewals
	deadline time.Time     // local, conservative end of the lease
	expiry   *time.Timer   // nil until armed (see start)
	renewal  *time.Timer   // nil: never renewed
	every    time.Duration // between renewals after the first; 0: none
	retry    time.Duration // after a failed renewal
	lastErr  error         // the last renewal's error, nil after a success
}

// Owner is what a Keeper keeps alive.
type Owner interface {
	// RenewTTL returns the lease a renewal asks for, from now; <= 0: none
	// (the expiry timer ends the lease). Keeper.Mu is held.
	RenewTTL() time.Duration
	// ExtendLease resets the lease in Redis to ttl from now; false: refused.
	ExtendLease(ctx context.Context, ttl time.Duration) (bool, error)
	// ValidUntil is the conservative local end of a lease of ttl renewed
	// by a call sent at sent.
	ValidUntil(sent time.Time, ttl time.Duration) time.Time
	// Renewed reports a renewal's result (telemetry).
	Renewed(ok bool, err error)
	// Lose ends the lease as lost for why; lastErr is the last failed
	// renewal's error, if the renewals since the last success failed.
	// Keeper.Mu is not held.
	Lose(why Loss, lastErr error)
}

// RetryAfter is the pause after a failed renewal for a lease renewed every
// every: a quarter of it, between 10ms and 1s.
func RetryAfter(every time.Duration) time.Duration {
	return max(min(every/4, time.Second), 10*time.Millisecond)
}

// Start arms the timers: the lease ends at until unless renewed; the first
// renewal comes after first (none if first <= 0), later ones every every.
// A lease that is never renewed may leave its expiry timer to
// ArmExpiryLocked (lazy): until someone needs the loss reported when it
// happens (a context to cancel), the owner reads OverdueLocked instead,
// and the uncontended path saves a timer and its callback. A renewed lease
// needs the timer to end failed retries.
func (k *Keeper) Start(owner Owner, until time.Time, first, every, retry time.Duration, lazy bool) {
	k.Mu.Lock()
	defer k.Mu.Unlock()
	k.owner, k.deadline, k.every, k.retry = owner, until, every, retry
	if first > 0 {
		k.renewal = time.AfterFunc(first, k.renew)
	} else if lazy {
		return
	}
	k.ArmExpiryLocked()
}

// ArmExpiryLocked arms the expiry timer if it is not yet; k.Mu is held.
func (k *Keeper) ArmExpiryLocked() {
	if k.expiry == nil && !k.stopped {
		k.expiry = time.AfterFunc(time.Until(k.deadline), k.expired)
	}
}

// OverdueLocked reports whether the deadline passed without a confirmed
// renewal while the lease is kept, and the last renewal's error; k.Mu is
// held. It reads the clock, not the timers: after the process was paused
// past its deadline, the owner learns of the loss here at once, while the
// expiry timer may not have run yet. The owner then loses the lease
// itself (Owner.Lose), as the timer would have.
func (k *Keeper) OverdueLocked() (bool, error) {
	return !k.stopped && !time.Now().Before(k.deadline), k.lastErr
}

// StopLocked stops the timers and the renewals for good; k.Mu is held. It
// reports whether they were running.
func (k *Keeper) StopLocked() bool {
	if k.stopped {
		return false
	}
	k.stopped = true
	if k.expiry != nil {
		k.expiry.Stop()
	}
	if k.renewal != nil {
		k.renewal.Stop()
	}
	return true
}

// SetDeadlineLocked moves the local end of the lease; k.Mu is held.
func (k *Keeper) SetDeadlineLocked(until time.Time) {
	k.deadline = until
	if k.expiry != nil {
		k.expiry.Reset(time.Until(until))
	}
}

// expired runs when the local deadline passes without a confirmed renewal.
func (k *Keeper) expired() {
	k.Mu.Lock()
	err := k.lastErr
	k.Mu.Unlock()
	k.owner.Lose(Expired, err)
}

// renew runs on the renewal timer.
func (k *Keeper) renew() {
	k.Mu.Lock()
	if k.stopped {
		k.Mu.Unlock()
		return
	}
	deadline, ttl := k.deadline, k.owner.RenewTTL()
	k.Mu.Unlock()
	if ttl <= 0 {
		return // the expiry timer ends it
	}

	ctx, cancel := context.WithDeadline(driver.WithPriority(context.Background()), deadline)
	sent := time.Now()
	ok, err := k.owner.ExtendLease(ctx, ttl)
	cancel()
	k.owner.Renewed(ok, err)

	k.Mu.Lock()
	if k.stopped {
		k.Mu.Unlock()
		return
	}
	k.lastErr = err
	if step, is := err.(*StepError); is {
		k.Mu.Unlock()
		k.owner.Lose(Stepped, step.Err)
		return
	}
	if err == nil && !ok {
		k.Mu.Unlock()
		k.owner.Lose(Refused, nil)
		return
	}
	if !time.Now().Before(k.deadline) {
		// The reply came after the deadline, which may have been reported
		// already: a late confirmation does not bring the lease back.
		k.Mu.Unlock()
		k.owner.Lose(Expired, err)
		return
	}
	if err != nil {
		k.renewal.Reset(k.retry)
	} else {
		k.SetDeadlineLocked(k.owner.ValidUntil(sent, ttl))
		if k.every > 0 {
			k.renewal.Reset(k.every)
		}
	}
	k.Mu.Unlock()
}

// Stop marks the keeper stopped before it ever started: a lease that is
// never renewed itself (a multi-key root, whose parts are).
func (k *Keeper) Stop() {
	k.Mu.Lock()
	k.stopped = true
	k.Mu.Unlock()
}

// Loss says why a kept lease was lost, for its log record.
type Loss uint8

const (
	// Refused: a renewal was refused: the key is gone (deleted, evicted,
	// or Redis restarted without persistence) or holds another owner's
	// token.
	Refused Loss = iota + 1
	// ExtendRefused: the same, found by Lease.Extend.
	ExtendRefused
	// Expired: the local deadline passed with no confirmed renewal:
	// renewals failed (Redis unavailable), or a fixed lease overran.
	Expired
	// Forced: Locker.ForceRelease freed the lock; lastErr is the
	// *lockerr.Forced with the reason.
	Forced
	// Stepped: a renewal found the server's clock stepped (an Owner's
	// ExtendLease returned a *StepError); lastErr says how far.
	Stepped
)

// StepError is returned by an Owner's ExtendLease when the renewal found
// the server's clock stepped: the keeper ends the lease at once (Stepped)
// instead of retrying.
type StepError struct{ Err error }

func (e *StepError) Error() string { return e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// Schedule is when a lease granted at at for granted, on terms of ttl
// (watchdog: renewed every renewEvery until released), is first renewed
// and how often after (0: never). A grant shorter than the terms, a
// hand-over's grant window, is confirmed at a third of it after the grant
// itself (not after this process heard of it), so a late notice does not
// push the confirmation past the window's end; a holder done before then
// never pays for it.
func Schedule(at time.Time, granted, ttl time.Duration, watchdog bool, renewEvery time.Duration) (first, every time.Duration) {
	switch {
	case granted < ttl:
		first = max(time.Until(at.Add(granted/3)), time.Millisecond)
	case watchdog:
		first = renewEvery
	}
	if watchdog {
		every = renewEvery
	}
	return first, every
}
