package single

import (
	"context"
	"errors"
	"time"

	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/hub"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/protocol"
)

// wait waits for a hand-over after a busy first try (r, sent when sent).
//
// The waiter sits in the key's queue in Redis; a release hands the lock
// straight to the queue's head and publishes the grant. This process's
// waiters on the key share one safety re-check at the end of the current
// holder's lease (see package hub), so a lost notice, a holder that crashed or a
// grant that lapsed costs at most that lease, and only one call per process.
//
// Each round: stay subscribed (listen), ask Redis when a notice may have
// been missed (recheck), tell the hub when to re-check (observe), then
// wait for what comes first: a grant (take), a reason to ask Redis again,
// the end of the caller's wait (expire) or of its context or the Locker
// (quit).
func (b *Backend) wait(ctx context.Context, n protocol.Names, token string, t backend.Terms, w *hub.Waiter, sent time.Time, r protocol.Reply) (backend.Held, error) {
	defer b.Waiting(t)()
	q := &queued{b: b, ctx: ctx, n: n, token: token, t: t, until: sent.Add(t.Wait), sent: sent, r: r}
	q.wt = b.nd.Hub.Watch(n.Channel, w)
	defer q.wt.Close()
	deadline := time.NewTimer(time.Until(q.until))
	defer deadline.Stop()
	for {
		if err := q.listen(); err != nil {
			return backend.Held{}, err
		}
		if q.ask {
			if h, done, err := q.recheck(); done {
				return h, err
			}
			if q.ask {
				continue // a late grant handed back: queued again, ask again
			}
		}
		q.observe()
		select {
		case g := <-w.Grant:
			if h, done, err := q.take(g); done {
				return h, err
			}
		case <-w.Kick:
			// The subscriber connection broke: notifications may be lost.
			q.wt.Broken()
			q.ask = true
		case <-w.Check:
			q.ask = true
		case <-q.wt.Polled():
			q.ask = true
		case <-deadline.C:
			return q.expire()
		case <-ctx.Done():
			return q.quit(errors.Join(lockerr.ErrNotObtained, ctx.Err()))
		case <-t.Closing:
			return q.quit(lockerr.ErrClosed)
		}
	}
}

// queued is a waiter queued in Redis, through wait's rounds.
type queued struct {
	b     *Backend
	ctx   context.Context
	n     protocol.Names
	token string
	t     backend.Terms
	wt    *hub.Watch
	until time.Time // the caller's wait ends

	// The last try: when it was sent and Redis's reply (the holder's
	// lease left, the server's clock).
	sent time.Time
	r    protocol.Reply

	ask      bool // a notice may have been missed: ask Redis (recheck)
	observed bool // the hub was told of r (observe)

	// A late grant this waiter handed back (see recheck): its fence, and
	// the server time at which the waiter was queued again (0: not yet).
	dropped, requeued int64
}

// listen makes sure the waiter is subscribed to its key's channel; a
// subscription made only now may have missed a notice, so it asks Redis.
// On failure the waiter leaves the queue and the error says why.
func (q *queued) listen() error {
	missed, err := q.wt.Ensure(q.ctx, q.sent)
	if err != nil {
		// Queued by the first try; the token is done, so off the
		// caller's path (leave's context drops ctx's cancellation).
		go func() { _, _ = q.b.leave(q.ctx, q.n, q.token, protocol.LeaveReleaseGrant) }()
		return errors.Join(lockerr.ErrNotObtained, err)
	}
	q.ask = q.ask || missed
	return nil
}

// recheck asks Redis whether the waiter holds the lock (acquire.lua's
// re-check). done is true when wait ends with h and err: the lock, or a
// failure. A grant that lapsed before the reply came, while the caller's
// wait goes on, is handed back and the waiter queued again: recheck
// returns not done with ask set.
func (q *queued) recheck() (h backend.Held, done bool, err error) {
	q.ask = false
	q.sent = time.Now()
	q.r, err = q.b.acquire(q.ctx, q.n, q.t.TTL, q.t.Wait, protocol.AcquireRecheck, q.t.Call)
	if err != nil {
		// Queued before, so there is something to clean up even when
		// this call was never sent.
		q.b.abandon(q.n, q.token, nil)
		return backend.Held{}, true, lockerr.ObtainFailed(q.ctx, err)
	}
	if q.r.Status == protocol.StatusObtained {
		h, err = q.hold(q.r, q.sent)
		if !errors.Is(err, lockerr.ErrGrantExpired) || !time.Now().Before(q.until) {
			return h, true, err
		}
		q.dropped, q.requeued = q.r.Fence, 0
		// Granted (a hand-over's short window) but over before this
		// re-check's reply arrived: the process was too slow to take the
		// grant up (starved, paused). lease handed it on; the caller's
		// wait is not over, so queue again for the rest of it rather
		// than fail as busy long before it.
		q.ask = true
		return backend.Held{}, false, nil
	}
	if q.dropped != 0 && q.requeued == 0 {
		q.requeued = q.r.Server
	}
	q.observed = false
	return backend.Held{}, false, nil
}

// hold turns a reply that says the waiter holds the lock, asked for at
// sent, into the held lock: confirmed under WithReplicaAck (granted), else
// as Redis granted it (lease; ErrGrantExpired when it ended before the reply).
func (q *queued) hold(r protocol.Reply, sent time.Time) (backend.Held, error) {
	if q.b.Cfg.AckReplicas > 0 {
		return q.b.granted(q.ctx, q.n, q.token, r.Fence, sent, q.t)
	}
	return q.b.lease(q.ctx, q.n, q.token, r.Fence, sent, r.PTTL)
}

// observe tells the hub, once per reply, when the holder's lease ends: the
// key's waiters in this process share one re-check then.
func (q *queued) observe() {
	if !q.observed {
		q.observed = true
		q.wt.Observe(q.r.PTTL, q.r.Server)
	}
}

// take takes up a grant published by a release. done is true when wait
// ends with h and err; otherwise the grant was the notice of one handed
// back (ignored), or it may have lapsed and ask is set.
func (q *queued) take(g hub.Grant) (h backend.Held, done bool, err error) {
	if g.Fence < q.dropped || (g.Fence == q.dropped && g.Server < q.requeued) {
		// The notice of the grant handed back in recheck, arriving after
		// it: the token no longer holds it. A grant since it was queued
		// again has a larger fence (a reader's can be equal: it gets the
		// current one) and a later time.
		return backend.Held{}, false, nil
	}
	at := q.grantedAt(g)
	left := time.Until(at.Add(g.PTTL))
	if left > 0 && q.b.Cfg.AckReplicas == 0 && (g.PTTL >= q.t.TTL || left >= g.PTTL*2/3) {
		return backend.Held{Fence: g.Fence, At: at, Granted: g.PTTL}, true, nil
	}
	if left > 0 {
		// A grant window that reached this process late (it was starved
		// or paused): a third of it has gone, so the lease's first
		// renewal would come too late to confirm it. Confirm it now,
		// before the caller enters its critical section; if it lapsed
		// meanwhile, Redis says so. Under WithReplicaAck every hand-over
		// is confirmed so, acknowledged (see granted).
		h, ok, err := q.b.confirm(q.ctx, q.n, q.token, g.Fence, at, q.t)
		if errors.Is(err, lockerr.ErrNotReplicated) {
			h, err = q.b.unreplicated(q.n, q.token, err)
			return h, true, err
		}
		if err != nil {
			q.b.abandon(q.n, q.token, nil)
			return backend.Held{}, true, lockerr.ObtainFailed(q.ctx, err)
		}
		if ok {
			return h, true, nil
		}
	}
	// Handed over while this process could not run (paused or starved),
	// the grant may have lapsed: Redis knows.
	q.ask = true
	return backend.Held{}, false, nil
}

// grantedAt is a conservative local time of grant g: it happened
// g.Server-r.Server ms after the server answered the last try r, which
// was answered after it was sent.
func (q *queued) grantedAt(g hub.Grant) time.Time {
	at := q.sent.Add(time.Duration(g.Server-q.r.Server-1) * time.Millisecond)
	if g.After.After(at) {
		// A later lower bound (see hub.Grant): this estimate starts at
		// the waiter's try, which a burst's queue of calls may have held
		// up long before Redis ran it, and would make a prompt grant look
		// late, to be confirmed by a call of its own before the caller
		// may enter.
		at = g.After
	}
	return at
}

// expire ends a wait whose time is up: the waiter leaves the queue,
// keeping a lock handed to it meanwhile, or fails as busy.
func (q *queued) expire() (backend.Held, error) {
	sent := time.Now()
	r, err := q.b.leave(q.ctx, q.n, q.token, protocol.LeaveKeepGrant)
	if err != nil {
		return backend.Held{}, lockerr.ObtainFailed(q.ctx, err)
	}
	if r.Status == protocol.StatusObtained {
		return q.hold(r, sent)
	}
	return backend.Held{}, lockerr.ErrNotObtained
}

// quit ends a wait that the caller's context or the Locker's closing
// ended, with err: the waiter leaves the queue, releasing a lock handed
// to it meanwhile.
func (q *queued) quit(err error) (backend.Held, error) {
	_, _ = q.b.leave(q.ctx, q.n, q.token, protocol.LeaveReleaseGrant)
	return backend.Held{}, err
}

// confirm extends a hand-over's grant window, granted at at, to the
// caller's terms at once: the Locker's lease in watchdog mode, else the
// rest of the TTL counted from the grant. ok is false when the grant had
// lapsed (the token no longer holds the lock).
func (b *Backend) confirm(ctx context.Context, n protocol.Names, token string, fence int64, at time.Time, t backend.Terms) (backend.Held, bool, error) {
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
