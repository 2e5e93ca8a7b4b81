package hub

import (
	"context"
	"time"
)

// Watch keeps one waiting call subscribed to its key's channel and queued
// as a local waiter there: the lock and idempotency waits share it.
type Watch struct {
	h       *Hub
	channel string
	w       *Waiter
	m       Member      // zero while unsubscribed
	poll    *time.Timer // re-checks while unsubscribed
	pollC   <-chan time.Time
}

// Watch returns a watch of channel for w, not yet subscribed (see Ensure).
func (h *Hub) Watch(channel string, w *Waiter) *Watch {
	return &Watch{h: h, channel: channel, w: w}
}

// Ensure subscribes if not subscribed. missed reports that the subscription
// was confirmed only after since, so a notice published in between may have
// been lost: re-check. An error means ctx ended; any other failure leaves the
// watch unsubscribed, so re-checks come every 100ms until it subscribes.
func (wt *Watch) Ensure(ctx context.Context, since time.Time) (missed bool, err error) {
	if wt.m.s != nil {
		return false, nil
	}
	m, missed, err := wt.h.Join(ctx, wt.channel, since, wt.w)
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

// Observe records a busy reply: the holder's lease had pttl left at server
// time server (ms; 0: unknown). Subscribed, the key's one safety timer moves
// there; unsubscribed, the watch polls at that time or within 100ms,
// whichever comes first.
func (wt *Watch) Observe(pttl time.Duration, server int64) {
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

// Polled fires when an unsubscribed watch should re-check (nil otherwise).
func (wt *Watch) Polled() <-chan time.Time { return wt.pollC }

// Broken drops the subscription after the listener connection broke.
func (wt *Watch) Broken() {
	wt.h.Leave(wt.m)
	wt.m = Member{}
}

// Close stops the watch's poll timer and leaves its subscription.
func (wt *Watch) Close() {
	if wt.poll != nil {
		wt.poll.Stop()
	}
	wt.h.Leave(wt.m)
}
