package locker

import (
	"context"
	"time"
)

// watch keeps one waiting call subscribed to its key's channel and queued
// as a local waiter there: the lock and idempotency waits share it.
type watch struct {
	h       *hub
	channel string
	w       *waiter
	m       member      // zero while unsubscribed
	poll    *time.Timer // re-checks while unsubscribed
	pollC   <-chan time.Time
}

func (h *hub) watch(channel string, w *waiter) *watch {
	return &watch{h: h, channel: channel, w: w}
}

// ensure subscribes if not subscribed. missed reports that the subscription
// was confirmed only after since, so a notice published in between may have
// been lost: re-check. An error means ctx ended; any other failure leaves the
// watch unsubscribed, so re-checks come every 100ms until it subscribes.
func (wt *watch) ensure(ctx context.Context, since time.Time) (missed bool, err error) {
	if wt.m.s != nil {
		return false, nil
	}
	m, missed, err := wt.h.join(ctx, wt.channel, since, wt.w)
	switch {
	case err == nil:
		wt.m = m
		if wt.poll != nil {
			// It polled until now: re-check, which also arms the key's
			// safety timer.
			wt.poll.Stop()
			wt.pollC = nil
			missed = true
		}
		return missed, nil
	case ctx.Err() != nil:
		return false, ctx.Err()
	}
	return false, nil
}

// observe records a busy reply: the holder's lease had pttl left at server
// time server (ms; 0: unknown). Subscribed, the key's one safety timer moves
// there; unsubscribed, the watch polls at that time or within 100ms,
// whichever comes first.
func (wt *watch) observe(pttl time.Duration, server int64) {
	if wt.m.s != nil {
		wt.h.mu.Lock()
		wt.h.observeLocked(wt.m.s, pttl, server, false)
		wt.h.mu.Unlock()
		return
	}
	d := min(max(pttl, 0)+2*time.Millisecond, 100*time.Millisecond)
	if wt.poll == nil {
		wt.poll = time.NewTimer(d)
	} else {
		wt.poll.Reset(d)
	}
	wt.pollC = wt.poll.C
}

// polled fires when an unsubscribed watch should re-check (nil otherwise).
func (wt *watch) polled() <-chan time.Time { return wt.pollC }

// broken drops the subscription after the listener connection broke.
func (wt *watch) broken() {
	wt.h.leave(wt.m)
	wt.m = member{}
}

func (wt *watch) close() {
	if wt.poll != nil {
		wt.poll.Stop()
	}
	wt.h.leave(wt.m)
}
