package hub

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/locktag/locktag/locker/driver"
)

// broken runs when the listener's connection failed: every subscription is
// gone on the server side, so waiters are told to re-subscribe and re-check.
func (h *Hub) broken(lis driver.Listener) func(error) {
	return func(error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.lis != lis {
			return
		}
		h.lis = nil
		for _, s := range h.chans {
			h.forgetLocked(s)
		}
		for _, w := range h.waiters {
			notify(w.Kick)
		}
		if h.ctlLis == lis {
			// Notices published until the next subscription are missed:
			// their leases learn it at their next renewal (refused).
			h.ctlLis = nil
			h.ctlOn.Store(false)
		}
	}
}

// listener returns the live listener, opening one if needed.
func (h *Hub) listener(ctx context.Context) (driver.Listener, error) {
	h.dialMu.Lock()
	defer h.dialMu.Unlock()
	h.mu.Lock()
	lis, closed := h.lis, h.closed
	h.mu.Unlock()
	if closed {
		return nil, driver.ErrListenerClosed
	}
	if lis != nil {
		return lis, nil
	}
	var bl struct {
		sync.Mutex
		lis driver.Listener
	}
	bl.Lock() // broken may not look at bl.lis before it is set
	lis, err := h.drv.Listen(ctx, h.deliver, func(err error) {
		bl.Lock()
		l := bl.lis
		bl.Unlock()
		h.broken(l)(err)
	})
	bl.lis = lis
	bl.Unlock()
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.lis = lis
	h.mu.Unlock()
	return lis, nil
}

// Member is one waiter's place in a subscription's local queue.
type Member struct {
	s *subscription
	e *list.Element
}

// Join makes sure channel is subscribed and queues w, if not nil, as a local
// waiter on it. recheck reports that the subscription was confirmed only
// after since, so a message published in between may have been missed, or
// that a free notice or this hub's cut-off notice arrived after since,
// before w was queued to hear it.
func (h *Hub) Join(ctx context.Context, channel string, since time.Time, w *Waiter) (m Member, recheck bool, err error) {
	h.mu.Lock()
	m = h.joinLocked(channel, w)
	s := m.s
	h.mu.Unlock()
	select {
	case <-s.ready:
	case <-ctx.Done():
		h.Leave(m)
		return Member{}, false, ctx.Err()
	}
	if s.err != nil {
		h.Leave(m)
		return Member{}, false, s.err
	}
	h.mu.Lock()
	freed, cut := s.freed, s.cut
	h.mu.Unlock()
	return m, !s.readyAt.Before(since) || !freed.Before(since) || !cut.Before(since), nil
}

// joinLocked takes a reference on channel's subscription, subscribing it
// if there is none, and queues w, if not nil, as a local waiter on it; h.mu
// is held.
func (h *Hub) joinLocked(channel string, w *Waiter) (m Member) {
	s := h.chans[channel]
	if s != nil {
		s.refs++
		if s.linger != nil {
			s.linger.Stop()
			s.linger = nil
		}
	} else {
		s = &subscription{channel: channel, refs: 1, ready: make(chan struct{})}
		h.chans[channel] = s
		go h.subscribe(s)
	}
	m.s = s
	if w != nil {
		m.e = s.queue.PushBack(w)
	}
	return m
}

// subscribe performs the SUBSCRIBE for a new subscription on its own
// context, so one waiter's cancellation does not fail the others.
func (h *Hub) subscribe(s *subscription) {
	ctx, cancel := context.WithTimeout(context.Background(), h.bounds.Timeout)
	defer cancel()
	lis, err := h.listener(ctx)
	if err == nil {
		err = lis.Subscribe(ctx, s.channel)
	}
	h.mu.Lock()
	s.lis, s.err, s.readyAt = lis, err, time.Now()
	switch {
	case err != nil && h.chans[s.channel] == s:
		h.forgetLocked(s)
	case err == nil && s.refs == 0 && h.chans[s.channel] == nil:
		// Dropped while the SUBSCRIBE was on its way, when dropLocked had
		// no listener to unsubscribe on, and not subscribed again since:
		// unsubscribe now, under h.mu as dropLocked does. (A subscription
		// made since owns the channel, and unsubscribes it when dropped.)
		_ = lis.Unsubscribe(s.channel)
	}
	h.mu.Unlock()
	close(s.ready)
}

// Leave drops one user of m's subscription and takes its waiter out of the
// local queue; a re-check it was told to make and did not passes to the next
// waiter. The last user unsubscribes after the linger.
func (h *Hub) Leave(m Member) {
	s := m.s
	if s == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if m.e != nil {
		first := s.queue.Front() == m.e
		s.queue.Remove(m.e)
		if first && len(m.e.Value.(*Waiter).Check) > 0 {
			s.checkFirst()
		}
	}
	s.refs--
	if s.refs > 0 || h.chans[s.channel] != s {
		return
	}
	if h.linger <= 0 {
		h.dropLocked(s)
		return
	}
	s.linger = time.AfterFunc(h.linger, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if s.refs == 0 && h.chans[s.channel] == s {
			h.dropLocked(s)
		}
	})
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// forgetLocked removes s from chans and stops its timers; h.mu is held.
func (h *Hub) forgetLocked(s *subscription) {
	if h.chans[s.channel] == s {
		delete(h.chans, s.channel)
	}
	if s.linger != nil {
		s.linger.Stop()
	}
	if s.safety != nil {
		s.safety.Stop()
	}
}

// dropLocked unsubscribes s (one whose SUBSCRIBE is still on its way is
// unsubscribed by subscribe, when it completes); h.mu is held, which
// orders the UNSUBSCRIBE before any later SUBSCRIBE of the same channel.
func (h *Hub) dropLocked(s *subscription) {
	h.forgetLocked(s)
	if s.lis != nil {
		_ = s.lis.Unsubscribe(s.channel)
	}
}

// Close closes the subscriber connection; waiters fall back to re-checks.
func (h *Hub) Close() error {
	h.mu.Lock()
	lis := h.lis
	h.lis, h.closed = nil, true
	for _, s := range h.chans {
		h.forgetLocked(s)
	}
	h.mu.Unlock()
	if lis != nil {
		return lis.Close()
	}
	return nil
}
