package locker

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"
)

// hub multiplexes the waiters of one Locker onto a single subscriber
// connection. Each key's channel is subscribed while at least one local
// waiter waits on it (and for a short linger after), and a hand-over
// message "token fence server_ms" is routed to the one waiter whose token
// it names. Messages for tokens of other processes are ignored.
type hub struct {
	drv Driver
	o   *options

	dialMu sync.Mutex // serialises opening the listener

	mu      sync.Mutex
	lis     Listener
	closed  bool
	chans   map[string]*subscription
	waiters map[string]*waiter
}

// subscription is one channel's state on the current listener. A
// subscription from a listener that broke is dropped from chans; its holders
// still release it, which then has no effect.
type subscription struct {
	channel string
	refs    int
	ready   chan struct{} // closed when the SUBSCRIBE was confirmed or failed
	err     error         // set before ready is closed
	readyAt time.Time
	linger  *time.Timer
	lis     Listener
	free    []*waiter // Redlock waiters, first come first served: a free notice wakes the first
}

// waiter is one waiting Obtain call.
type waiter struct {
	token string
	grant chan grant    // the hand-over, at most one
	kick  chan struct{} // the listener broke: re-subscribe and re-check
	free  chan struct{} // a free notice: try again (Redlock)
}

type grant struct {
	fence  int64
	server int64 // ms, server clock
}

func newHub(drv Driver, o *options) *hub {
	return &hub{drv: drv, o: o, chans: make(map[string]*subscription), waiters: make(map[string]*waiter)}
}

func newWaiter(token string) *waiter {
	return &waiter{token: token, grant: make(chan grant, 1), kick: make(chan struct{}, 1), free: make(chan struct{}, 1)}
}

func (h *hub) register(token string) *waiter {
	w := newWaiter(token)
	h.register1(w)
	return w
}

func (h *hub) register1(w *waiter) {
	h.mu.Lock()
	h.waiters[w.token] = w
	h.mu.Unlock()
}

func (h *hub) unregister(w *waiter) {
	h.mu.Lock()
	delete(h.waiters, w.token)
	h.mu.Unlock()
}

// deliver runs on the listener's goroutine.
func (h *hub) deliver(channel, payload string) {
	if payload == "-" {
		h.mu.Lock()
		if s := h.chans[channel]; s != nil && len(s.free) > 0 {
			notify(s.free[0].free)
		}
		h.mu.Unlock()
		return
	}
	token, rest, ok := strings.Cut(payload, " ")
	if !ok {
		return
	}
	f, sv, _ := strings.Cut(rest, " ")
	fence, err1 := strconv.ParseInt(f, 10, 64)
	server, err2 := strconv.ParseInt(sv, 10, 64)
	if err1 != nil || err2 != nil {
		return
	}
	h.handOver(token, grant{fence: fence, server: server})
}

// handOver tells the local waiter token, if any, that it holds the lock.
// It may be told twice — by the releasing process's own reply and by the
// notice — and keeps the first.
func (h *hub) handOver(token string, g grant) {
	h.mu.Lock()
	w := h.waiters[token]
	h.mu.Unlock()
	if w == nil {
		return
	}
	select {
	case w.grant <- g:
	default:
	}
}

// broken runs when the listener's connection failed: every subscription is
// gone on the server side, so waiters are told to re-subscribe and re-check.
func (h *hub) broken(lis Listener) func(error) {
	return func(error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.lis != lis {
			return
		}
		h.lis = nil
		for ch, s := range h.chans {
			if s.linger != nil {
				s.linger.Stop()
			}
			delete(h.chans, ch)
		}
		for _, w := range h.waiters {
			notify(w.kick)
		}
	}
}

// listener returns the live listener, opening one if needed.
func (h *hub) listener(ctx context.Context) (Listener, error) {
	h.dialMu.Lock()
	defer h.dialMu.Unlock()
	h.mu.Lock()
	lis, closed := h.lis, h.closed
	h.mu.Unlock()
	if closed {
		return nil, errListenerClosed
	}
	if lis != nil {
		return lis, nil
	}
	var bl struct {
		sync.Mutex
		lis Listener
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

// join makes sure channel is subscribed and counts the caller as a user of
// the subscription. recheck reports that the subscription was confirmed only
// after since, so a message published in between may have been missed.
func (h *hub) join(ctx context.Context, channel string, since time.Time) (s *subscription, recheck bool, err error) {
	h.mu.Lock()
	s = h.chans[channel]
	if s != nil {
		s.refs++
		if s.linger != nil {
			s.linger.Stop()
			s.linger = nil
		}
		h.mu.Unlock()
	} else {
		s = &subscription{channel: channel, refs: 1, ready: make(chan struct{})}
		h.chans[channel] = s
		h.mu.Unlock()
		go h.subscribe(s)
	}
	select {
	case <-s.ready:
	case <-ctx.Done():
		h.leave(s)
		return nil, false, ctx.Err()
	}
	if s.err != nil {
		h.leave(s)
		return nil, false, s.err
	}
	return s, !s.readyAt.Before(since), nil
}

// subscribe performs the SUBSCRIBE for a new subscription on its own
// context, so one waiter's cancellation does not fail the others.
func (h *hub) subscribe(s *subscription) {
	ctx, cancel := context.WithTimeout(context.Background(), h.o.callTimeout)
	defer cancel()
	lis, err := h.listener(ctx)
	if err == nil {
		err = lis.Subscribe(ctx, s.channel)
	}
	h.mu.Lock()
	s.lis, s.err, s.readyAt = lis, err, time.Now()
	if err != nil && h.chans[s.channel] == s {
		delete(h.chans, s.channel)
	}
	h.mu.Unlock()
	close(s.ready)
}

// leave drops one user of s. The last user unsubscribes after the linger.
func (h *hub) leave(s *subscription) {
	if s == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s.refs--
	if s.refs > 0 || h.chans[s.channel] != s {
		return
	}
	if h.o.linger <= 0 {
		h.dropLocked(s)
		return
	}
	s.linger = time.AfterFunc(h.o.linger, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if s.refs == 0 && h.chans[s.channel] == s {
			h.dropLocked(s)
		}
	})
}

// queueFree adds w to the waiters woken by s's free notices.
func (h *hub) queueFree(s *subscription, w *waiter) {
	h.mu.Lock()
	s.free = append(s.free, w)
	h.mu.Unlock()
}

// unqueueFree removes w; if w was first, the next waiter inherits any
// notice w did not use.
func (h *hub) unqueueFree(s *subscription, w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, x := range s.free {
		if x == w {
			s.free = append(s.free[:i], s.free[i+1:]...)
			if i == 0 && len(s.free) > 0 && len(w.free) > 0 {
				notify(s.free[0].free)
			}
			return
		}
	}
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// dropLocked unsubscribes s; h.mu is held, which orders the UNSUBSCRIBE
// before any later SUBSCRIBE of the same channel.
func (h *hub) dropLocked(s *subscription) {
	delete(h.chans, s.channel)
	if s.lis != nil {
		_ = s.lis.Unsubscribe(s.channel)
	}
}

func (h *hub) close() error {
	h.mu.Lock()
	lis := h.lis
	h.lis, h.closed = nil, true
	for ch, s := range h.chans {
		if s.linger != nil {
			s.linger.Stop()
		}
		delete(h.chans, ch)
	}
	h.mu.Unlock()
	if lis != nil {
		return lis.Close()
	}
	return nil
}

// watch keeps one waiting call subscribed to its key's channel and says
// when to re-check without a notice: the lock and idempotency waits share it.
type watch struct {
	h       *hub
	channel string
	sub     *subscription
	safety  *time.Timer
}

func (h *hub) watch(channel string) *watch {
	return &watch{h: h, channel: channel, safety: time.NewTimer(time.Hour)}
}

// ensure subscribes if not subscribed. missed reports that the subscription
// was confirmed only after since, so a notice published in between may have
// been lost: re-check. An error means ctx ended; any other failure leaves the
// watch unsubscribed, so re-checks come every 100ms until it subscribes.
func (wt *watch) ensure(ctx context.Context, since time.Time) (missed bool, err error) {
	if wt.sub != nil {
		return false, nil
	}
	s, missed, err := wt.h.join(ctx, wt.channel, since)
	switch {
	case err == nil:
		wt.sub = s
		return missed, nil
	case ctx.Err() != nil:
		return false, ctx.Err()
	}
	return false, nil
}

// arm sets the safety timer: a lost notice costs at most the remaining
// lease (pttl) of whoever holds the key; unsubscribed, at most 100ms.
func (wt *watch) arm(pttl time.Duration) <-chan time.Time {
	next := max(pttl, 0) + 2*time.Millisecond
	if wt.sub == nil {
		next = min(next, 100*time.Millisecond)
	}
	wt.safety.Reset(next)
	return wt.safety.C
}

// broken drops the subscription after the listener connection broke.
func (wt *watch) broken() {
	wt.h.leave(wt.sub)
	wt.sub = nil
}

func (wt *watch) close() {
	wt.safety.Stop()
	wt.h.leave(wt.sub)
}
