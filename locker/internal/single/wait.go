package single

import (
	"context"
	"errors"
	"time"

	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/hub"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/names"
	"github.com/locktag/locktag/locker/internal/scripts"
)

// wait waits for a hand-over after a busy first try (r, sent when sent).
//
// The waiter sits in the key's queue in Redis; a release hands the lock
// straight to the queue's head and publishes the grant. This process's
// waiters on the key share one safety re-check at the end of the current
// holder's lease (see package hub), so a lost notice, a holder that crashed or a
// grant that lapsed costs at most that lease, and only one call per process.
func (b *Backend) wait(ctx context.Context, n names.Names, token string, t backend.Terms, w *hub.Waiter, sent time.Time, r scripts.Reply) (backend.Held, error) {
	waitUntil := sent.Add(t.Wait)
	defer b.Waiting(t)()
	wt := b.nd.Hub.Watch(n.Channel, w)
	defer wt.Close()
	deadline := time.NewTimer(time.Until(waitUntil))
	defer deadline.Stop()
	recheck := false
	observed := false
	// A late grant this waiter handed back (see below): its fence, and the
	// server time at which the waiter was queued again (0: not yet).
	var dropped, requeued int64
	for {
		missed, err := wt.Ensure(ctx, sent)
		if err != nil {
			// Queued by the first try; the token is done, so off the
			// caller's path (leave's context drops ctx's cancellation).
			go func() { _, _ = b.leave(ctx, n, token, scripts.LeaveReleaseGrant) }()
			return backend.Held{}, errors.Join(lockerr.ErrNotObtained, err)
		}
		recheck = recheck || missed
		if recheck {
			recheck = false
			sent = time.Now()
			r, err = b.acquire(ctx, n, t.TTL, t.Wait, scripts.AcquireRecheck, t.Call)
			if err != nil {
				// Queued before, so there is something to clean up even
				// when this call was never sent.
				b.abandon(n, token, nil)
				return backend.Held{}, lockerr.ObtainFailed(ctx, err)
			}
			if r.Status == scripts.StatusObtained {
				var h backend.Held
				if b.Cfg.AckReplicas > 0 {
					h, err = b.granted(ctx, n, token, r.Fence, sent, t)
				} else {
					h, err = b.lease(ctx, n, token, r.Fence, sent, r.PTTL)
				}
				if !errors.Is(err, lockerr.ErrLate) || !time.Now().Before(waitUntil) {
					return h, err
				}
				dropped, requeued = r.Fence, 0
				// Granted (a hand-over's short window) but over before
				// this re-check's reply arrived: the process was too slow
				// to take the grant up (starved, paused). lease handed it
				// on; the caller's wait is not over, so queue again for
				// the rest of it rather than fail as busy long before it.
				recheck = true
				continue
			}
			if dropped != 0 && requeued == 0 {
				requeued = r.Server
			}
			observed = false
		}
		if !observed {
			observed = true
			wt.Observe(r.PTTL, r.Server)
		}
		select {
		case g := <-w.Grant:
			if g.Fence < dropped || (g.Fence == dropped && g.Server < requeued) {
				// The notice of the grant handed back above, arriving
				// after it: the token no longer holds it. A grant since
				// it was queued again has a larger fence (a reader's can
				// be equal: it gets the current one) and a later time.
				continue
			}
			// The grant happened g.Server-r.Server ms after the server
			// answered r, and r was answered after sent: a conservative
			// local time of the grant.
			at := sent.Add(time.Duration(g.Server-r.Server-1) * time.Millisecond)
			if g.After.After(at) {
				// A later lower bound (see hub.Grant): this estimate
				// starts at the waiter's try, which a burst's queue of
				// calls may have held up long before Redis ran it, and
				// would make a prompt grant look late, to be confirmed
				// by a call of its own before the caller may enter.
				at = g.After
			}
			left := time.Until(at.Add(g.PTTL))
			if left > 0 && b.Cfg.AckReplicas == 0 && (g.PTTL >= t.TTL || left >= g.PTTL*2/3) {
				return backend.Held{Fence: g.Fence, At: at, Granted: g.PTTL}, nil
			}
			if left > 0 {
				// A grant window that reached this process late (it was
				// starved or paused): a third of it has gone, so the
				// lease's first renewal would come too late to confirm
				// it. Confirm it now, before the caller enters its
				// critical section; if it lapsed meanwhile, Redis says so.
				// Under WithReplicaAck every hand-over is confirmed so,
				// acknowledged (see granted).
				h, ok, err := b.confirm(ctx, n, token, g.Fence, at, t)
				if errors.Is(err, lockerr.ErrNotReplicated) {
					return b.unreplicated(n, token, err)
				}
				if err != nil {
					b.abandon(n, token, nil)
					return backend.Held{}, lockerr.ObtainFailed(ctx, err)
				}
				if ok {
					return h, nil
				}
			}
			// Handed over while this process could not run (paused or
			// starved), the grant may have lapsed: Redis knows.
			recheck = true
		case <-w.Kick:
			// The subscriber connection broke: notifications may be lost.
			wt.Broken()
			recheck = true
		case <-w.Check:
			recheck = true
		case <-wt.Polled():
			recheck = true
		case <-deadline.C:
			sent = time.Now()
			r, err := b.leave(ctx, n, token, scripts.LeaveKeepGrant)
			if err != nil {
				return backend.Held{}, lockerr.ObtainFailed(ctx, err)
			}
			if r.Status == scripts.StatusObtained {
				if b.Cfg.AckReplicas > 0 {
					return b.granted(ctx, n, token, r.Fence, sent, t)
				}
				return b.lease(ctx, n, token, r.Fence, sent, r.PTTL)
			}
			return backend.Held{}, lockerr.ErrNotObtained
		case <-ctx.Done():
			_, _ = b.leave(ctx, n, token, scripts.LeaveReleaseGrant)
			return backend.Held{}, errors.Join(lockerr.ErrNotObtained, ctx.Err())
		case <-t.Closing:
			_, _ = b.leave(ctx, n, token, scripts.LeaveReleaseGrant)
			return backend.Held{}, lockerr.ErrClosed
		}
	}
}

// confirm extends a hand-over's grant window, granted at at, to the
// caller's terms at once: the Locker's lease in watchdog mode, else the
// rest of the TTL counted from the grant. ok is false when the grant had
// lapsed (the token no longer holds the lock).
func (b *Backend) confirm(ctx context.Context, n names.Names, token string, fence int64, at time.Time, t backend.Terms) (backend.Held, bool, error) {
	ttl := t.TTL
	if !t.Watchdog {
		ttl -= time.Since(at)
		if ttl <= 0 {
			return backend.Held{}, false, nil
		}
	}
	ok, err := b.Extend(ctx, n, token, ttl)
	if err != nil || !ok {
		return backend.Held{}, false, err
	}
	// The lease ends ttl after the extend ran, which is after at: at +
	// t.TTL is a conservative local end (the cap itself for a fixed TTL).
	return backend.Held{Fence: fence, At: at, Granted: t.TTL}, true, nil
}
