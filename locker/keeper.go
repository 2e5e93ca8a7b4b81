package locker

import (
	"context"
	"sync"
	"time"

	"github.com/locktag/locktag/locker/driver"
)

// keeper is the one renewal engine of a lease in Redis: a lock's (Lease)
// and an idempotency claim's in-flight marker (Claim). It keeps two timers:
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
//
// mu also guards the owner's own fields where its comments say so.
type keeper struct {
	mu       sync.Mutex
	owner    keptLease
	stopped  bool          // lost or ended: no more renewals
	deadline time.Time     // local, conservative end of the lease
	expiry   *time.Timer   // nil until armed (see start)
	renewal  *time.Timer   // nil: never renewed
	every    time.Duration // between renewals after the first; 0: none
	retry    time.Duration // after a failed renewal
	lastErr  error         // the last renewal's error, nil after a success
}

// keptLease is what a keeper keeps alive.
type keptLease interface {
	// renewTTL returns the lease a renewal asks for, from now; <= 0: none
	// (the expiry timer ends the lease). keeper.mu is held.
	renewTTL() time.Duration
	// extendLease resets the lease in Redis to ttl from now; false: refused.
	extendLease(ctx context.Context, ttl time.Duration) (bool, error)
	// validUntil is the conservative local end of a lease of ttl renewed
	// by a call sent at sent.
	validUntil(sent time.Time, ttl time.Duration) time.Time
	// renewed reports a renewal's result (telemetry).
	renewed(ok bool, err error)
	// lose ends the lease as lost for why; lastErr is the last failed
	// renewal's error, if the renewals since the last success failed.
	// keeper.mu is not held.
	lose(why lossCause, lastErr error)
}

// retryAfter is the pause after a failed renewal for a lease renewed every
// every: a quarter of it, between 10ms and 1s.
func retryAfter(every time.Duration) time.Duration {
	return max(min(every/4, time.Second), 10*time.Millisecond)
}

// start arms the timers: the lease ends at until unless renewed; the first
// renewal comes after first (none if first <= 0), later ones every every.
// A lease that is never renewed may leave its expiry timer to
// armExpiryLocked (lazy): until someone needs the loss reported when it
// happens (a context to cancel), the owner reads pastDeadlineLocked
// instead, and the uncontended path saves a timer and its callback (2
// allocations). A renewed lease needs the timer to end failed retries.
func (k *keeper) start(owner keptLease, until time.Time, first, every, retry time.Duration, lazy bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.owner, k.deadline, k.every, k.retry = owner, until, every, retry
	if first > 0 {
		k.renewal = time.AfterFunc(first, k.renew)
	} else if lazy {
		return
	}
	k.armExpiryLocked()
}

// armExpiryLocked arms the expiry timer if it is not yet; k.mu is held.
func (k *keeper) armExpiryLocked() {
	if k.expiry == nil && !k.stopped {
		k.expiry = time.AfterFunc(time.Until(k.deadline), k.expired)
	}
}

// pastDeadlineLocked reports whether the deadline passed with no expiry
// timer armed to report it; k.mu is held.
func (k *keeper) pastDeadlineLocked() bool {
	return k.expiry == nil && !k.stopped && !time.Now().Before(k.deadline)
}

// stopLocked stops the timers and the renewals for good; k.mu is held. It
// reports whether they were running.
func (k *keeper) stopLocked() bool {
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

// setDeadlineLocked moves the local end of the lease; k.mu is held.
func (k *keeper) setDeadlineLocked(until time.Time) {
	k.deadline = until
	if k.expiry != nil {
		k.expiry.Reset(time.Until(until))
	}
}

// expired runs when the local deadline passes without a confirmed renewal.
func (k *keeper) expired() {
	k.mu.Lock()
	err := k.lastErr
	k.mu.Unlock()
	k.owner.lose(lossExpired, err)
}

// renew runs on the renewal timer.
func (k *keeper) renew() {
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return
	}
	deadline, ttl := k.deadline, k.owner.renewTTL()
	k.mu.Unlock()
	if ttl <= 0 {
		return // the expiry timer ends it
	}

	ctx, cancel := context.WithDeadline(driver.WithPriority(context.Background()), deadline)
	sent := time.Now()
	ok, err := k.owner.extendLease(ctx, ttl)
	cancel()
	k.owner.renewed(ok, err)

	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return
	}
	k.lastErr = err
	if err == nil && !ok {
		k.mu.Unlock()
		k.owner.lose(lossRefused, nil)
		return
	}
	if err != nil {
		k.renewal.Reset(k.retry)
	} else {
		k.setDeadlineLocked(k.owner.validUntil(sent, ttl))
		if k.every > 0 {
			k.renewal.Reset(k.every)
		}
	}
	k.mu.Unlock()
}
