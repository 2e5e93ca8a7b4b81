package redigo

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// errStalled fails the calls in flight on a pipelined connection that
// answered nothing for the stall timeout.
var errStalled = errors.New("redigo: pipelined connection silent for the stall timeout with calls in flight")

// errRetired closes a pipelined connection that takes no more calls once
// its calls are answered; no call fails with it.
var errRetired = errors.New("redigo: pipelined connection retired")

// stallTicks is how many times per stall timeout the watchdog looks for a
// reply (see watch).
const stallTicks = 4

// pipeSession is one dialled connection. Nobody owns it: callers take
// turns at its two roles.
//
// Writing (flat combining): the caller that finds nobody writing becomes
// the writer, sends its call and every call queued meanwhile, flushes once,
// and repeats while calls keep arriving. A lone caller thus writes its own
// call; concurrent callers share writes.
//
// Reading: replies come back in the order the calls were written
// (inflight), and one reader at a time holds the role. When a call is the
// only one in flight, its own caller reads its reply, with its deadline as
// the read deadline: a lone caller pays no goroutine hand-off and no timer
// (measured: the hand-off to a reader goroutine cost a lone caller 1.6–2.1×
// its latency on 2 cores). With more in flight the session's helper
// goroutine reads, handing replies over as fast as they come — one reader
// draining a batch beats passing the role from caller to caller, each of
// whom must be scheduled first. A caller that left (its context), or whose
// deadline is too close to risk the connection on, never reads; the helper
// does, without a read deadline: a watchdog (watch) closes a connection
// that stays silent for the stall timeout with calls in flight.
type pipeSession struct {
	conn    redis.Conn
	stall   time.Duration
	dead    chan struct{}
	kick    chan struct{} // cap 1: the helper takes the reader role
	retired atomic.Bool   // takes no more calls; closed once drained
	replies atomic.Uint64 // replies read: the watchdog's sign of life

	mu       sync.Mutex
	queue    []*pipeCall // waiting for the active writer
	spare    []*pipeCall
	writing  bool
	inflight []*pipeCall // written, not yet answered, in order
	// inflightBuf is the start of inflight's array: readers take calls
	// off its front, so once it is empty, writers start over from here
	// rather than appending to a slice with no room left.
	inflightBuf []*pipeCall
	reading     bool      // a caller or the helper holds the reader role
	readDL      time.Time // the reader's read deadline (zero: the helper's, none)

	// The watchdog: watch runs every stall/stallTicks while calls are in
	// flight (watching); strikes counts the ticks in a row that found the
	// same calls in flight and no reply read since the tick before.
	watchdog *time.Timer
	watching bool
	wasBusy  bool
	seen     uint64
	strikes  int

	once sync.Once
	err  error // set before dead is closed
}

func startSession(conn redis.Conn, stall time.Duration) *pipeSession {
	s := &pipeSession{
		conn:  conn,
		stall: stall,
		dead:  make(chan struct{}),
		kick:  make(chan struct{}, 1),
	}
	go s.helper()
	return s
}

func (s *pipeSession) broken() bool { return isClosed(s.dead) }

// fail kills the session: the connection is closed, so a blocked write or
// read returns, and every call in flight fails with err.
func (s *pipeSession) fail(err error) {
	s.once.Do(func() {
		s.err = err
		close(s.dead)
		_ = s.conn.Close()
	})
	s.mu.Lock()
	failed := s.inflight
	s.inflight = nil
	if s.watchdog != nil {
		s.watchdog.Stop()
	}
	s.mu.Unlock()
	for _, c := range failed {
		c.finish(nil, s.err)
	}
}

// retireIdle retires the session if nothing is queued, being written or in
// flight on it, and reports whether it did: it then takes no more calls
// (submit reports false, so its caller moves to a new session), and the
// caller closes it with fail.
func (s *pipeSession) retireIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writing || len(s.queue) > 0 || len(s.inflight) > 0 {
		return false
	}
	s.retired.Store(true)
	return true
}

// drained reports whether a retired session has nothing left to answer and
// nobody holding a role, so that it is closed (fail, without mu). mu is
// held.
func (s *pipeSession) drained() bool {
	return s.retired.Load() && !s.writing && !s.reading && len(s.queue) == 0 && len(s.inflight) == 0
}

// submit queues c for writing and, when nobody is writing, writes until
// the queue is empty. It reports false, having written nothing, when the
// session is dead or retired already. now is the time of the call.
func (s *pipeSession) submit(c *pipeCall, now time.Time) bool {
	s.mu.Lock()
	if s.broken() || s.retired.Load() {
		s.mu.Unlock()
		return false
	}
	if s.reading && !s.readDL.IsZero() && now.After(s.readDL) {
		// The reader's deadline has passed: its read is failing, which
		// closes the connection, unless the reply beat the timer — as when
		// this process was paused (SIGSTOP, a debugger, a VM migration)
		// for longer than the deadline. A call written now would be lost
		// with the connection: it goes to a new one, and this one is
		// closed once drained.
		s.retired.Store(true)
		s.mu.Unlock()
		return false
	}
	s.queue = append(s.queue, c)
	if s.writing {
		s.mu.Unlock()
		return true
	}
	s.writing = true
	if len(s.inflight) > 1 {
		// Replies in flight will wake callers that call again at once:
		// yield once so that they join this write. (With one in flight
		// there is at most one such caller: not worth the yield.)
		s.mu.Unlock()
		runtime.Gosched()
		s.mu.Lock()
	}
	for len(s.queue) > 0 {
		batch := s.queue
		s.queue = s.spare[:0]
		s.mu.Unlock()
		err := s.write(batch)
		clear(batch)
		s.mu.Lock()
		s.spare = batch[:0]
		if err != nil {
			for _, q := range s.queue {
				q.finish(nil, s.err)
			}
			s.queue = s.queue[:0]
		}
	}
	s.writing = false
	drained := s.drained()
	s.mu.Unlock()
	if drained {
		s.fail(errRetired)
	}
	return true
}

// write sends batch with one flush; the calls join inflight before the
// flush, in order, so a reader may start on them at once.
func (s *pipeSession) write(batch []*pipeCall) error {
	for _, c := range batch {
		if err := s.conn.Send(c.cmd, c.args...); err != nil {
			s.fail(fmt.Errorf("redigo: pipelined write: %w", err))
			for _, q := range batch {
				q.finish(nil, s.err)
			}
			return err
		}
	}
	s.mu.Lock()
	dead := s.broken()
	if !dead {
		if len(s.inflight) == 0 {
			s.inflight = s.inflightBuf[:0]
		}
		s.inflight = append(s.inflight, batch...)
		if cap(s.inflight) > cap(s.inflightBuf) {
			s.inflightBuf = s.inflight[:0]
		}
		if !s.watching {
			s.watching, s.wasBusy, s.strikes = true, false, 0
			if s.watchdog == nil {
				s.watchdog = time.AfterFunc(s.stall/stallTicks, s.watch)
			} else {
				s.watchdog.Reset(s.stall / stallTicks)
			}
		}
		if !s.reading {
			// Nothing was in flight: the reader role goes to the first
			// call's caller (often this writer itself).
			s.reading = true
			s.handOff()
		}
	}
	s.mu.Unlock()
	if dead {
		for _, q := range batch {
			q.finish(nil, s.err)
		}
		return s.err
	}
	if err := s.conn.Flush(); err != nil {
		s.fail(fmt.Errorf("redigo: pipelined write: %w", err))
		return err
	}
	return nil
}

// watch is the watchdog's tick, every stall/stallTicks while calls are in
// flight. A connection that read no reply over stallTicks whole ticks with
// the same calls in flight — the stall timeout — is broken: closing it
// fails the calls and ends a blocked read. Ticks, not read deadlines: when
// this process is paused (SIGSTOP, a debugger, a VM migration) the ticks
// missed meanwhile fire once, and the replies that came meanwhile are read
// long before stallTicks more, so a pause is not taken for the server's
// silence.
func (s *pipeSession) watch() {
	s.mu.Lock()
	busy := (len(s.inflight) > 0 || s.reading) && !s.broken()
	n := s.replies.Load()
	if busy && s.wasBusy && n == s.seen {
		s.strikes++
	} else {
		s.strikes = 0
	}
	s.wasBusy, s.seen = busy, n
	stalled := s.strikes >= stallTicks
	s.watching = busy && !stalled
	if s.watching {
		s.watchdog.Reset(s.stall / stallTicks)
	}
	s.mu.Unlock()
	if stalled {
		s.fail(errStalled)
	}
}

// canLead reports whether c's caller may take the reader role at now: it
// reads with its own remaining time as the connection's read deadline, so
// it must have at least half the stall time left (a caller with a sooner
// deadline would otherwise cut the connection for everyone).
func (s *pipeSession) canLead(c *pipeCall, now time.Time) bool {
	return c.deadline.IsZero() || c.deadline.Sub(now) >= s.stall/2
}

// await waits for c's reply, reading it (and those before it) itself when
// the reader role is offered. done reports that c was answered, so that
// its caller may reuse it; a call whose caller left is still held by the
// session.
func (s *pipeSession) await(ctx context.Context, c *pipeCall) (v any, err error, done bool) {
	// The usual case of a lone caller: its own write offered it the reader
	// role (handOff checked canLead), so it reads at once, arming no timer.
	select {
	case <-c.done:
		return c.reply, c.err, true
	case <-c.lead:
		v, err := s.readUntil(c)
		return v, err, true
	default:
	}
	var expired <-chan time.Time
	if !c.deadline.IsZero() {
		wait := time.Until(c.deadline)
		if wait <= 0 {
			s.abandon(c)
			return nil, context.DeadlineExceeded, false
		}
		// ctx's Done need not fire at its deadline (the locker's call
		// contexts add a deadline without a timer). Stop leaves no stale
		// tick behind (Go 1.23 timers), so the timer is reused.
		if c.timer == nil {
			c.timer = time.NewTimer(wait)
		} else {
			c.timer.Reset(wait)
		}
		defer c.timer.Stop()
		expired = c.timer.C
	}
	for {
		select {
		case <-c.done:
			return c.reply, c.err, true
		case <-c.lead:
			if s.canLead(c, time.Now()) {
				v, err := s.readUntil(c)
				return v, err, true
			}
			s.mu.Lock()
			c.offered = false
			s.kickHelper()
			s.mu.Unlock()
		case <-ctx.Done():
			s.abandon(c)
			return nil, ctx.Err(), false
		case <-expired:
			s.abandon(c)
			return nil, context.DeadlineExceeded, false
		}
	}
}

// abandon records that c's caller left; a reader role offered to it and
// not taken passes to the helper. Its reply is read and dropped later: a
// caller's own deadline never breaks the connection.
func (s *pipeSession) abandon(c *pipeCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.abandoned = true
	if c.offered {
		c.offered = false
		s.kickHelper()
	}
}

// kickHelper hands the reader role to the helper goroutine. mu is held.
func (s *pipeSession) kickHelper() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// readUntil reads replies in order, handing each to its call, until c's
// has come; then it passes the reader role on. The caller holds the role.
func (s *pipeSession) readUntil(c *pipeCall) (any, error) {
	for !c.answered() {
		if !s.readOne(c.deadline) {
			break
		}
	}
	s.mu.Lock()
	s.handOff()
	drained := s.drained()
	s.mu.Unlock()
	if drained {
		s.fail(errRetired)
	}
	<-c.done
	return c.reply, c.err
}

// handOff passes the reader role on: to the caller of the only call in
// flight when that caller still waits and may read; with more in flight,
// or a caller that cannot read, to the helper; with nothing in flight the
// role is free. mu is held.
func (s *pipeSession) handOff() {
	switch {
	case len(s.inflight) == 0 || s.broken():
		s.reading = false
	case len(s.inflight) == 1 && !s.inflight[0].abandoned && s.canLead(s.inflight[0], time.Now()):
		// One call in flight: its caller reads its own reply, no hand-off.
		s.inflight[0].offer()
	default:
		s.kickHelper()
	}
}

// helper reads whenever it is handed the reader role, until nothing is in
// flight or a lone call's own caller can take the role back, and stops
// with the session.
func (s *pipeSession) helper() {
	for {
		select {
		case <-s.kick:
		case <-s.dead:
			return
		}
		for {
			// A lone call's caller reads its own reply; else read on.
			s.mu.Lock()
			if len(s.inflight) == 0 || s.broken() {
				s.reading = false
				drained := s.drained()
				s.mu.Unlock()
				if drained {
					s.fail(errRetired)
				}
				break
			}
			if h := s.inflight[0]; len(s.inflight) == 1 && !h.abandoned && s.canLead(h, time.Now()) {
				h.offer()
				s.mu.Unlock()
				break
			}
			s.mu.Unlock()
			if !s.readOne(time.Time{}) {
				break
			}
		}
	}
}

// readOne reads the reply to the first call in flight and hands it over.
// It reads until deadline, or with no read deadline when it is zero (the
// watchdog bounds that wait); a read that fails kills the session. It
// reports whether the session is still alive.
func (s *pipeSession) readOne(deadline time.Time) bool {
	s.mu.Lock()
	if len(s.inflight) == 0 {
		// Only a dead session empties inflight under a reader.
		s.mu.Unlock()
		return false
	}
	c := s.inflight[0]
	s.inflight[0] = nil
	s.inflight = s.inflight[1:]
	s.readDL = deadline
	s.mu.Unlock()
	var timeout time.Duration // 0: no read deadline
	if !deadline.IsZero() {
		timeout = max(time.Until(deadline), time.Millisecond)
	}
	v, err := redis.ReceiveWithTimeout(s.conn, timeout)
	if _, isReply := err.(redis.Error); err != nil && !isReply {
		if !s.broken() {
			err = fmt.Errorf("redigo: pipelined read: %w", err)
		}
		s.fail(err)
		c.finish(nil, s.err)
		return false
	}
	s.replies.Add(1)
	c.finish(v, err)
	return true
}
