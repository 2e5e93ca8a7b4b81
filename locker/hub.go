package locker

import (
	"container/list"
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktag/locktag/locker/driver"
)

// hub multiplexes the waiters of one Locker onto a single subscriber
// connection per Redis node. Each key's channel is subscribed while at least
// one local waiter waits on it (and for a short linger after). Messages on a
// lock's channel:
//
//   - "token fence server_ms pttl_ms": the lock was handed to token for
//     pttl_ms (a grant). The waiter whose token it names, if local, takes
//     it; every local waiter of the key learns when that lease ends.
//   - "!sid": a grant to one of subscriber sid's waiters lapsed, and Redis
//     cut off all of sid's queue entries. If sid is this hub's, its waiters
//     on the key re-check, which queues the live ones again.
//   - "-": the lock is free (Redlock, whose masters keep no hand-over).
//   - "token 0 0": the idempotency record token waits for has ended.
//
// Waiting needs no polling, and a lost message costs at most one lease: per
// key the hub keeps one safety timer at the end of the current holder's
// lease (as the last grant or busy reply told it), and when it fires the
// first local waiter — one per process, not all of them — re-checks.
type hub struct {
	drv driver.Driver
	o   *options
	sid string // this hub's subscriber id in queue entries (shared by a Locker's hubs)

	dialMu sync.Mutex // serialises opening the listener

	mu      sync.Mutex
	lis     driver.Listener
	closed  bool
	chans   map[string]*subscription
	waiters map[string]*waiter

	// The control channel (see control.go): "" when the hub has none.
	// ctlOn is set while the channel is subscribed, or being subscribed,
	// on the current listener; a broken listener clears it, and the next
	// lease (or renewal) subscribes again. ctlFn handles its messages.
	ctl   string
	ctlFn func(payload string)
	ctlOn atomic.Bool
	// ctlLis is the listener the control channel was subscribed on; mu.
	ctlLis driver.Listener
}

// subscription is one channel's state on the current listener. A
// subscription from a listener that broke is dropped from chans; its holders
// still leave it, which then has no effect.
type subscription struct {
	channel string
	refs    int
	ready   chan struct{} // closed when the SUBSCRIBE was confirmed or failed
	err     error         // set before ready is closed
	readyAt time.Time
	linger  *time.Timer
	lis     driver.Listener

	// The local waiters on the channel, first come first served (values
	// are *waiter); guarded by hub.mu.
	queue list.List
	// safety fires when the holder's lease is expected to end; then the
	// first local waiter re-checks. backstop re-arms it in case that
	// waiter reports nothing (it left, or its call failed).
	safety   *time.Timer
	backstop time.Duration
	seen     int64 // server ms of the report the timer follows
}

// waiter is one waiting Obtain (or idempotency) call.
type waiter struct {
	token string
	grant chan grant    // the hand-over, at most one
	kick  chan struct{} // the listener broke: re-subscribe and re-check
	check chan struct{} // re-check: safety timer, cut off, or a free notice
}

type grant struct {
	fence  int64
	server int64         // ms, server clock
	pttl   time.Duration // the lease the grant set
}

func newHub(drv driver.Driver, o *options, sid string) *hub {
	return &hub{drv: drv, o: o, sid: sid, chans: make(map[string]*subscription), waiters: make(map[string]*waiter)}
}

func newWaiter(token string) *waiter {
	return &waiter{token: token, grant: make(chan grant, 1), kick: make(chan struct{}, 1), check: make(chan struct{}, 1)}
}

// registered recycles the waiters of register: a waiting Obtain registers
// one before its first try, so the uncontended path would otherwise pay 4
// allocations for it. Recycling is safe because every send to a
// registered waiter's channels happens under hub.mu after finding it in
// waiters (or in a subscription's queue, which it leaves first), and
// unregister removes it under hub.mu, then empties its channels.
var registered = sync.Pool{New: func() any { return newWaiter("") }}

// register returns a waiter for token that hand-over messages reach.
// Unregister it when done, and use it no more.
func (h *hub) register(token string) *waiter {
	w := registered.Get().(*waiter)
	w.token = token
	h.mu.Lock()
	h.waiters[w.token] = w
	h.mu.Unlock()
	return w
}

func (h *hub) unregister(w *waiter) {
	h.mu.Lock()
	if h.waiters[w.token] == w {
		delete(h.waiters, w.token)
	}
	h.mu.Unlock()
	select {
	case <-w.grant:
	default:
	}
	select {
	case <-w.kick:
	default:
	}
	select {
	case <-w.check:
	default:
	}
	w.token = ""
	registered.Put(w)
}

// deliver runs on the listener's goroutine.
func (h *hub) deliver(channel, payload string) {
	switch {
	case channel == h.ctl && h.ctl != "":
		h.ctlFn(payload)
		return
	case payload == "-":
		h.mu.Lock()
		if s := h.chans[channel]; s != nil {
			s.checkFirst()
		}
		h.mu.Unlock()
		return
	case strings.HasPrefix(payload, "!"):
		if payload[1:] == h.sid {
			h.mu.Lock()
			if s := h.chans[channel]; s != nil {
				for e := s.queue.Front(); e != nil; e = e.Next() {
					notify(e.Value.(*waiter).check)
				}
			}
			h.mu.Unlock()
		}
		return
	}
	var f [4]string
	n := 0
	for rest := payload; n < 4; n++ {
		var ok bool
		f[n], rest, ok = strings.Cut(rest, " ")
		if !ok {
			n++
			break
		}
	}
	if n < 3 {
		return
	}
	var g grant
	var err error
	if g.fence, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return
	}
	if g.server, err = strconv.ParseInt(f[2], 10, 64); err != nil {
		return
	}
	if n == 4 {
		p, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return
		}
		g.pttl = time.Duration(p) * time.Millisecond
		h.mu.Lock()
		if s := h.chans[channel]; s != nil {
			h.observeLocked(s, g.pttl, g.server, true)
		}
		h.mu.Unlock()
	}
	h.handOver(f[0], g)
}

// handOver tells the local waiter token, if any, that it holds the lock.
// It may be told twice — by the releasing process's own reply and by the
// notice — and keeps the first.
func (h *hub) handOver(token string, g grant) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// Sent under mu: once unregister took it out, w may be recycled.
	if w := h.waiters[token]; w != nil {
		select {
		case w.grant <- g:
		default:
		}
	}
}

// observeLocked records that the current holder's lease ends pttl from now,
// as Redis reported at server time server (ms; 0: unknown): the first local
// waiter re-checks then. The newest report by server time wins — a grant
// notice delivered while a waiter was still handling an older busy reply
// must not be undone by it, and a reply from the same millisecond as a
// grant may predate it (notice tells which kind of report this is). h.mu
// is held.
func (h *hub) observeLocked(s *subscription, pttl time.Duration, server int64, notice bool) {
	if h.chans[s.channel] != s {
		return
	}
	if server != 0 {
		if server < s.seen || server == s.seen && !notice {
			return
		}
		s.seen = server
	}
	d := max(pttl, 0) + 2*time.Millisecond
	s.backstop = min(max(pttl, 20*time.Millisecond), time.Second)
	if s.safety == nil {
		s.safety = time.AfterFunc(d, func() { h.safetyFired(s) })
		return
	}
	s.safety.Reset(d)
}

// safetyFired runs when the holder's lease should have ended with no news.
func (h *hub) safetyFired(s *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.chans[s.channel] != s || s.queue.Len() == 0 {
		return
	}
	s.checkFirst()
	s.safety.Reset(s.backstop)
}

// checkFirst tells the first local waiter to re-check; hub.mu is held.
func (s *subscription) checkFirst() {
	if e := s.queue.Front(); e != nil {
		notify(e.Value.(*waiter).check)
	}
}

// broken runs when the listener's connection failed: every subscription is
// gone on the server side, so waiters are told to re-subscribe and re-check.
func (h *hub) broken(lis driver.Listener) func(error) {
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
			notify(w.kick)
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
func (h *hub) listener(ctx context.Context) (driver.Listener, error) {
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

// member is one waiter's place in a subscription's local queue.
type member struct {
	s *subscription
	e *list.Element
}

// join makes sure channel is subscribed and queues w, if not nil, as a local
// waiter on it. recheck reports that the subscription was confirmed only
// after since, so a message published in between may have been missed.
func (h *hub) join(ctx context.Context, channel string, since time.Time, w *waiter) (m member, recheck bool, err error) {
	h.mu.Lock()
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
	h.mu.Unlock()
	select {
	case <-s.ready:
	case <-ctx.Done():
		h.leave(m)
		return member{}, false, ctx.Err()
	}
	if s.err != nil {
		h.leave(m)
		return member{}, false, s.err
	}
	return m, !s.readyAt.Before(since), nil
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
		h.forgetLocked(s)
	}
	h.mu.Unlock()
	close(s.ready)
}

// leave drops one user of m's subscription and takes its waiter out of the
// local queue; a re-check it was told to make and did not passes to the next
// waiter. The last user unsubscribes after the linger.
func (h *hub) leave(m member) {
	s := m.s
	if s == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if m.e != nil {
		first := s.queue.Front() == m.e
		s.queue.Remove(m.e)
		if first && len(m.e.Value.(*waiter).check) > 0 {
			s.checkFirst()
		}
	}
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

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// forgetLocked removes s from chans and stops its timers; h.mu is held.
func (h *hub) forgetLocked(s *subscription) {
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

// dropLocked unsubscribes s; h.mu is held, which orders the UNSUBSCRIBE
// before any later SUBSCRIBE of the same channel.
func (h *hub) dropLocked(s *subscription) {
	h.forgetLocked(s)
	if s.lis != nil {
		_ = s.lis.Unsubscribe(s.channel)
	}
}

func (h *hub) close() error {
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
