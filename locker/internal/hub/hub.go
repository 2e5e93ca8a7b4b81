// Package hub is the locker's pub/sub side: per Redis node one Hub
// multiplexes every waiting call of a Locker onto one subscriber
// connection, delivers hand-overs to the waiter they name, keeps one
// safety re-check per key, and carries the control channel that
// force-release notices arrive on. It imports the driver seam and
// callctx only; backends use it through Register, Watch and HandOver.
//
// Each key's channel is subscribed while at least
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
package hub

import (
	"container/list"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/callctx"
)

// Hub multiplexes the waiters of one Locker onto one subscriber
// connection per Redis node: the messages it reads, and the safety timer
// per key, are described in the package documentation.
type Hub struct {
	drv    driver.Driver
	bounds callctx.Bounds
	linger time.Duration // how long a channel stays subscribed after its last waiter
	sid    string        // this hub's subscriber id in queue entries (shared by a Locker's hubs)

	dialMu sync.Mutex // serialises opening the listener

	mu      sync.Mutex
	lis     driver.Listener
	closed  bool
	chans   map[string]*subscription
	waiters map[string]*Waiter
	// arrivals counts the waiting calls at each channel, registered with
	// RegisterAt and not yet unregistered.
	arrivals map[string]int

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
	// are *Waiter); guarded by hub.mu.
	queue list.List
	// safety fires when the holder's lease is expected to end; then the
	// first local waiter re-checks. backstop re-arms it in case that
	// waiter reports nothing (it left, or its call failed).
	safety   *time.Timer
	backstop time.Duration
	seen     int64 // server ms of the report the timer follows
	// anchor is when this process sent the last release of the key that
	// handed it over, anchorServer the server time (ms) the hand-over
	// reported: the grants that notices tell of are timed from them
	// (HandOver), since a waiter's own estimate starts at its try, which
	// a burst's queue of calls may have held up long before Redis ran it.
	anchor       time.Time
	anchorServer int64
	// freed is when the last free notice "-" arrived, cut when the last
	// cut-off notice to this hub ("!sid") did: a waiter that joins after its
	// try was sent re-checks when one came since (Join).
	freed, cut time.Time
}

// Waiter is one waiting Obtain (or idempotency) call: what reaches it
// arrives on its channels.
type Waiter struct {
	token string
	// channel is where the waiter's call waits when it registered with
	// RegisterAt (else ""), early its reference on that channel's
	// subscription taken then (zero: none); both guarded by hub.mu.
	channel string
	early   Member
	Grant   chan Grant    // the hand-over, at most one
	Kick    chan struct{} // the listener broke: re-subscribe and re-check
	Check   chan struct{} // re-check: safety timer, cut off, or a free notice
}

// Grant is a hand-over: the lock was given to a waiter with fencing token
// Fence at server time Server for a lease of PTTL.
type Grant struct {
	Fence  int64
	Server int64         // ms, server clock
	PTTL   time.Duration // the lease the grant set
	// After is a local time no later than the grant (zero: unknown): when
	// the release that made it was sent, for a hand-over told by the
	// releasing process's own reply.
	After time.Time
}

// Config is what a Hub needs of its Locker's options.
type Config struct {
	Bounds callctx.Bounds // bounds each SUBSCRIBE
	Linger time.Duration  // a channel stays subscribed this long after its last waiter
	SID    string         // the Locker's subscriber id in queue entries
}

// New returns the hub of the node reached through drv. It opens no
// connection until a waiter or the control channel needs one.
func New(drv driver.Driver, cfg Config) *Hub {
	return &Hub{drv: drv, bounds: cfg.Bounds, linger: cfg.Linger, sid: cfg.SID, chans: make(map[string]*subscription), waiters: make(map[string]*Waiter), arrivals: make(map[string]int)}
}

// NewWaiter returns a waiter for token that is not registered for
// hand-overs (Redlock's waiters, which only hear free notices).
func NewWaiter(token string) *Waiter {
	return &Waiter{token: token, Grant: make(chan Grant, 1), Kick: make(chan struct{}, 1), Check: make(chan struct{}, 1)}
}

// registered recycles the waiters of register: a waiting Obtain registers
// one before its first try, so the uncontended path would otherwise pay
// for its channels. Recycling is safe because every send to a
// registered waiter's channels happens under hub.mu after finding it in
// waiters (or in a subscription's queue, which it leaves first), and
// unregister removes it under hub.mu, then empties its channels.
var registered = sync.Pool{New: func() any { return NewWaiter("") }}

// Register returns a waiter for token that hand-over messages reach.
// Unregister it when done, and use it no more.
func (h *Hub) Register(token string) *Waiter { return h.RegisterAt(token, "") }

// RegisterAt is Register for a call that will wait on channel if its
// first try finds the lock busy. When another such call of this hub is at
// the channel already — a burst — the channel is subscribed now, while the
// try is on its way: a waiter whose try was sent after the subscription
// was confirmed need not re-check for a notice published before it joined
// (see Join), where a burst of waiters that all tried before it would
// otherwise all re-check at once, ahead of the hand-overs they wait for.
// A lone call subscribes only once it waits.
func (h *Hub) RegisterAt(token, channel string) *Waiter {
	w := registered.Get().(*Waiter)
	w.token = token
	h.mu.Lock()
	h.waiters[w.token] = w
	if channel != "" {
		w.channel = channel
		n := h.arrivals[channel] + 1
		h.arrivals[channel] = n
		if n > 1 && !h.closed {
			w.early = h.joinLocked(channel, nil)
		}
	}
	h.mu.Unlock()
	return w
}

// Unregister takes w out of the hub and recycles it.
func (h *Hub) Unregister(w *Waiter) {
	h.mu.Lock()
	if h.waiters[w.token] == w {
		delete(h.waiters, w.token)
	}
	early := w.early
	if w.channel != "" {
		if n := h.arrivals[w.channel] - 1; n > 0 {
			h.arrivals[w.channel] = n
		} else {
			delete(h.arrivals, w.channel)
		}
		w.channel, w.early = "", Member{}
	}
	h.mu.Unlock()
	h.Leave(early)
	select {
	case <-w.Grant:
	default:
	}
	select {
	case <-w.Kick:
	default:
	}
	select {
	case <-w.Check:
	default:
	}
	w.token = ""
	registered.Put(w)
}

// deliver runs on the listener's goroutine.
func (h *Hub) deliver(channel, payload string) {
	switch {
	case channel == h.ctl && h.ctl != "":
		h.ctlFn(payload)
		return
	case payload == "-":
		h.mu.Lock()
		if s := h.chans[channel]; s != nil {
			s.freed = time.Now()
			s.checkFirst()
		}
		h.mu.Unlock()
		return
	case strings.HasPrefix(payload, "!"):
		if payload[1:] == h.sid {
			h.mu.Lock()
			if s := h.chans[channel]; s != nil {
				s.cut = time.Now()
				for e := s.queue.Front(); e != nil; e = e.Next() {
					notify(e.Value.(*Waiter).Check)
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
	var g Grant
	var err error
	if g.Fence, err = strconv.ParseInt(f[1], 10, 64); err != nil {
		return
	}
	if g.Server, err = strconv.ParseInt(f[2], 10, 64); err != nil {
		return
	}
	if n == 4 {
		p, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return
		}
		g.PTTL = time.Duration(p) * time.Millisecond
		h.mu.Lock()
		if s := h.chans[channel]; s != nil {
			h.observeLocked(s, g.PTTL, g.Server, true)
		}
		h.mu.Unlock()
	}
	h.HandOver(channel, f[0], g)
}

// anchorMaxAge bounds the age of a key's clock anchor that a notice's
// grant is timed by: the server's and this process's clocks drift apart
// by far less than the 1ms the estimate allows for over it.
const anchorMaxAge = time.Second

// HandOver tells the local waiter token, if any, that it holds the lock
// of channel. It may be told twice — by the releasing process's own reply
// and by the notice (none for a waiter of the releasing Locker) — and
// keeps the first. A grant with After (this
// process's release) is kept as the key's clock anchor; a notice's grant
// gets After from a fresh anchor (see anchorMaxAge).
func (h *Hub) HandOver(channel, token string, g Grant) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.chans[channel]; s != nil {
		switch {
		case !g.After.IsZero():
			s.anchor, s.anchorServer = g.After, g.Server
			if g.PTTL > 0 {
				// No notice follows a hand-over to this Locker's own
				// waiter: the new lease's end is known from here.
				h.observeLocked(s, g.PTTL, g.Server, true)
			}
		case !s.anchor.IsZero() && time.Since(s.anchor) < anchorMaxAge:
			// The anchor's release ran at or after s.anchor, at server
			// time anchorServer (ms, truncated): the grant came at least
			// g.Server-anchorServer-1ms later.
			g.After = s.anchor.Add(time.Duration(g.Server-s.anchorServer-1) * time.Millisecond)
		}
	}
	// Sent under mu: once unregister took it out, w may be recycled.
	if w := h.waiters[token]; w != nil {
		select {
		case w.Grant <- g:
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
func (h *Hub) observeLocked(s *subscription, pttl time.Duration, server int64, notice bool) {
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
func (h *Hub) safetyFired(s *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.chans[s.channel] != s || s.queue.Len() == 0 {
		return
	}
	s.checkFirst()
	s.safety.Reset(s.backstop)
}

// Recheck tells the first local waiter on channel, if any, to ask Redis
// whether it holds the lock: news of a hand-over to it may be lost (a
// release whose reply never came).
func (h *Hub) Recheck(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.chans[channel]; s != nil {
		s.checkFirst()
	}
}

// checkFirst tells the first local waiter to re-check; hub.mu is held.
func (s *subscription) checkFirst() {
	if e := s.queue.Front(); e != nil {
		notify(e.Value.(*Waiter).Check)
	}
}
