package locker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locktag/locktag/locker/internal/keeper"
)

// Release drops this hold; the lock is freed (and handed to the next waiter)
// when the last hold is released. Release ignores ctx's cancellation, so a
// cancelled request still releases its lock, and is bounded by the call
// timeout. It returns ErrNotHeld when the lock is no longer held by this
// lease (lost, expired, or released before).
func (le *Lease) Release(ctx context.Context) error { return le.end(ctx, 0) }

// ReleaseAfter drops this hold like Release, except that the last hold
// keeps the lock in Redis for d more: the lease ends here, and every other
// Obtain finds the lock busy until d has passed (a resubmitted request
// does not run twice). d <= 0 is Release. A semaphore's permit cannot be
// kept (ErrKindUnsupported, nothing touched).
func (le *Lease) ReleaseAfter(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return le.Release(ctx)
	}
	if le.n.Scripts.Keep == nil && le.parts == nil {
		return fmt.Errorf("%w: a semaphore's permit cannot be kept after its release", ErrKindUnsupported)
	}
	return le.end(ctx, d)
}

// end is Release (keep 0) or ReleaseAfter, reported and logged.
func (le *Lease) end(ctx context.Context, keep time.Duration) error {
	span := le.l.tel.startRelease(ctx)
	err := le.release(ctx, keep)
	le.l.tel.endRelease(span, le, err)
	if err != nil {
		le.l.log.Release(ctx, le.logLock(), err)
	}
	return err
}

// release drops this hold; keep > 0 keeps the lock that long after the
// last (ReleaseAfter).
func (le *Lease) release(ctx context.Context, keep time.Duration) error {
	root := le.root
	if root.parts != nil {
		return root.multiRelease(ctx, keep)
	}
	root.kp.Mu.Lock()
	if le.released {
		root.kp.Mu.Unlock()
		return ErrNotHeld
	}
	le.released = true
	root.live--
	last := root.live == 0
	// A lease that ran out is lost, whether or not its expiry timer has
	// run yet.
	ranOut, lastErr := root.kp.OverdueLocked()
	ranOut = ranOut && last
	lost := root.done || ranOut // the lease ended before this Release
	if last {
		root.kp.StopLocked()
	}
	ttl := root.t.ttl
	closedOut := root.done && errors.Is(root.cause, ErrClosed)
	root.kp.Mu.Unlock()
	if closedOut {
		// Released by Shutdown, whose connections may be closed by now.
		return fmt.Errorf("%w: %w", ErrClosed, ErrNotHeld)
	}
	if ranOut {
		root.lose(keeper.Expired, lastErr)
	}

	cctx := le.l.o.bounds().UpkeepIn(ctx, &le.upkeep)
	var err error
	if keep > 0 {
		err = le.l.be.Keep(cctx, le.n, le.token, ttl, keep)
	} else {
		err = le.l.be.Release(cctx, le.n, le.token, ttl)
	}
	if last {
		root.finish(ErrNotHeld, 0, nil)
	}
	if lost && err == nil {
		err = ErrNotHeld // freed in Redis, which counts a lease a little longer
	}
	return err
}

// finish ends the root: timers stopped, context cancelled with cause. A
// loss (why > 0) is logged first, so whoever sees the context end finds
// the log record already written.
func (root *Lease) finish(cause error, why keeper.Loss, lastErr error) {
	root.kp.Mu.Lock()
	if root.done {
		root.kp.Mu.Unlock()
		return
	}
	root.done, root.cause = true, cause
	root.kp.StopLocked()
	cancel := root.cancel
	root.cancel = nil
	root.kp.Mu.Unlock()
	root.l.untrack(root)
	if why > 0 {
		root.l.log.Lost(root.logLock(), why, lastErr)
	}
	if cancel != nil {
		cancel(cause)
	}
	if root.parts == nil {
		root.l.tel.endHold(root.span, root, cause)
	}
}
