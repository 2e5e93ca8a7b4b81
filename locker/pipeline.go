package locker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// errPipeClosed fails the calls of a pipelined connection that broke or was
// closed before they were written.
var errPipeClosed = errors.New("locker: pipelined connection closed")

// pipeDriver is the redigo driver with auto-pipelining (WithPipelining):
// calls from all goroutines are written to a few long-lived connections in
// batches and their replies read back in order, so that under concurrency one
// write and one read system call — on both sides of the socket — serve many
// calls. The pool's Dial function opens the connections; Listen is the plain
// driver's.
type pipeDriver struct {
	*redigoDriver
	conns []*pipeConn
	next  atomic.Uint32
}

// pipelinedDriver returns the Driver of WithPipelining: every script call is
// multiplexed onto conns connections (at least one) dialled with pool's Dial
// function, and pipelined: a caller that finds nobody writing writes its
// call and every call queued meanwhile with one write, and the replies are
// read back in order (see pipeSession). Under concurrency this serves many
// calls per system call on both the client and the server.
//
// The pool itself is used only for Listen's dial. Each caller waits no
// longer than its context's deadline. A connection that stays silent for
// stall while calls are in flight is closed and every call on it fails; the
// next call dials a new one.
func pipelinedDriver(pool *redis.Pool, conns int, stall time.Duration) Driver {
	if conns < 1 {
		conns = 1
	}
	d := &pipeDriver{redigoDriver: &redigoDriver{pool: pool}}
	for range conns {
		d.conns = append(d.conns, &pipeConn{dial: d.dial, stall: stall})
	}
	return d
}

func (d *pipeDriver) Eval(ctx context.Context, s *Script, keys []string, args ...any) (any, error) {
	pc := d.conns[0]
	if len(d.conns) > 1 {
		pc = d.conns[d.next.Add(1)%uint32(len(d.conns))]
	}
	argv := scriptArgs(s, keys, args)
	v, err := pc.do(ctx, "EVALSHA", argv)
	if e, ok := err.(redis.Error); ok && strings.HasPrefix(string(e), "NOSCRIPT") {
		argv[0] = s.srcArg
		v, err = pc.do(ctx, "EVAL", argv)
	}
	if err != nil {
		return nil, err
	}
	return normalize(v), nil
}

// closeReserved is called by Locker.Close: it closes the pipelined
// connections (calls in flight fail) besides the reserved one.
func (d *pipeDriver) closeReserved() {
	d.redigoDriver.closeReserved()
	for _, pc := range d.conns {
		pc.close()
	}
}

// pipeConn is one pipelined connection slot: the live session on it, dialled
// on first use and again after it broke.
type pipeConn struct {
	dial  func(context.Context) (redis.Conn, error)
	stall time.Duration

	mu     sync.Mutex
	s      *pipeSession
	closed bool
}

// pipeCall is one queued command and, once done is closed, its reply.
type pipeCall struct {
	cmd      string
	args     []any
	deadline time.Time // zero: none
	reply    any
	err      error
	done     chan struct{}
	lead     chan struct{} // cap 1: the reader role is offered to this caller

	// Guarded by the session's mu.
	offered   bool // a signal is (or was) on lead
	abandoned bool // the caller stopped waiting
}

// offer offers the reader role to c's caller. The session's mu is held. A
// call is offered the role at most once at a time, so lead has room.
func (c *pipeCall) offer() {
	c.offered = true
	select {
	case c.lead <- struct{}{}:
	default:
	}
}

func (c *pipeCall) finish(v any, err error) {
	c.reply, c.err = v, err
	close(c.done)
}

func (c *pipeCall) answered() bool { return isClosed(c.done) }

// isClosed reports whether ch is closed (it is only ever closed, never sent on).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (pc *pipeConn) do(ctx context.Context, cmd string, args []any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, notSent(err)
	}
	c := &pipeCall{cmd: cmd, args: args, done: make(chan struct{}), lead: make(chan struct{}, 1)}
	var expired <-chan time.Time
	if dl, ok := ctx.Deadline(); ok {
		wait := time.Until(dl)
		if wait <= 0 {
			return nil, notSent(context.DeadlineExceeded)
		}
		c.deadline = dl
		// ctx's Done need not fire at its deadline (the locker's call
		// contexts add a deadline without a timer).
		t := time.NewTimer(wait)
		defer t.Stop()
		expired = t.C
	}
	s, err := pc.submit(ctx, c)
	if err != nil {
		return nil, err
	}
	return s.await(ctx, c, expired)
}

// submit hands c to the live session and returns it. A session that died
// before taking the call has not written it, so one more session is worth
// a try.
func (pc *pipeConn) submit(ctx context.Context, c *pipeCall) (*pipeSession, error) {
	for attempt := 0; ; attempt++ {
		s, err := pc.session(ctx)
		if err != nil {
			return nil, notSent(err)
		}
		if s.submit(c) {
			return s, nil
		}
		if attempt > 0 {
			<-s.dead
			return nil, notSent(s.err)
		}
	}
}

// session returns the live session, dialling one when there is none.
func (pc *pipeConn) session(ctx context.Context) (*pipeSession, error) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.closed {
		return nil, errPipeClosed
	}
	if pc.s != nil && !pc.s.broken() {
		return pc.s, nil
	}
	conn, err := pc.dial(ctx)
	if err != nil {
		return nil, err
	}
	pc.s = startSession(conn, pc.stall)
	return pc.s, nil
}

func (pc *pipeConn) close() {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.closed = true
	if pc.s != nil {
		pc.s.fail(errPipeClosed)
		pc.s = nil
	}
}

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
// only one in flight, its own caller reads its reply: a lone caller pays no
// goroutine hand-off (measured: the hand-off to a reader goroutine cost a
// lone caller 1.6–2.1× its latency on 2 cores). With more in flight the
// session's helper goroutine reads, handing replies over as fast as they
// come — one reader draining a batch beats passing the role from caller to
// caller, each of whom must be scheduled first. A caller that left (its
// context), or whose deadline is too close to risk the connection on, never
// reads; the helper does.
type pipeSession struct {
	conn  redis.Conn
	stall time.Duration
	dead  chan struct{}
	kick  chan struct{} // cap 1: the helper takes the reader role

	mu       sync.Mutex
	queue    []*pipeCall // waiting for the active writer
	spare    []*pipeCall
	writing  bool
	inflight []*pipeCall // written, not yet answered, in order
	reading  bool        // a caller or the helper holds the reader role

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
	s.mu.Unlock()
	for _, c := range failed {
		c.finish(nil, s.err)
	}
}

// submit queues c for writing and, when nobody is writing, writes until
// the queue is empty. It reports false, having written nothing, when the
// session is dead already.
func (s *pipeSession) submit(c *pipeCall) bool {
	s.mu.Lock()
	if s.broken() {
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
	s.mu.Unlock()
	return true
}

// write sends batch with one flush; the calls join inflight before the
// flush, in order, so a reader may start on them at once.
func (s *pipeSession) write(batch []*pipeCall) error {
	for _, c := range batch {
		if err := s.conn.Send(c.cmd, c.args...); err != nil {
			s.fail(fmt.Errorf("locker: pipelined write: %w", err))
			for _, q := range batch {
				q.finish(nil, s.err)
			}
			return err
		}
	}
	s.mu.Lock()
	dead := s.broken()
	if !dead {
		s.inflight = append(s.inflight, batch...)
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
		s.fail(fmt.Errorf("locker: pipelined write: %w", err))
		return err
	}
	return nil
}

// canLead reports whether c's caller may take the reader role: it reads
// with its own remaining time as the connection's read deadline, so it
// must have at least half the stall time left (a caller with a sooner
// deadline would otherwise cut the connection for everyone).
func (s *pipeSession) canLead(c *pipeCall) bool {
	return c.deadline.IsZero() || time.Until(c.deadline) >= s.stall/2
}

// await waits for c's reply, reading it (and those before it) itself when
// the reader role is offered.
func (s *pipeSession) await(ctx context.Context, c *pipeCall, expired <-chan time.Time) (any, error) {
	for {
		select {
		case <-c.done:
			return c.reply, c.err
		case <-c.lead:
			if s.canLead(c) {
				return s.readUntil(c)
			}
			s.mu.Lock()
			c.offered = false
			s.kickHelper()
			s.mu.Unlock()
		case <-ctx.Done():
			s.abandon(c)
			return nil, ctx.Err()
		case <-expired:
			s.abandon(c)
			return nil, context.DeadlineExceeded
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
	s.mu.Unlock()
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
	case len(s.inflight) == 1 && !s.inflight[0].abandoned && s.canLead(s.inflight[0]):
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
				s.mu.Unlock()
				break
			}
			if h := s.inflight[0]; len(s.inflight) == 1 && !h.abandoned && s.canLead(h) {
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
// It reads until deadline (or, when zero, for the stall time); a read that
// fails kills the session. It reports whether the session is still alive.
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
	s.mu.Unlock()
	timeout := s.stall
	if !deadline.IsZero() {
		timeout = max(time.Until(deadline), time.Millisecond)
	}
	v, err := redis.ReceiveWithTimeout(s.conn, timeout)
	if _, isReply := err.(redis.Error); err != nil && !isReply {
		if !s.broken() {
			err = fmt.Errorf("locker: pipelined read: %w", err)
		}
		s.fail(err)
		c.finish(nil, s.err)
		return false
	}
	c.finish(v, err)
	return true
}
