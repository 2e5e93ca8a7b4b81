package redigo

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/locker/driver"
)

// errPipeClosed fails the calls of a pipelined connection that broke or was
// closed before they were written.
var errPipeClosed = errors.New("redigo: pipelined connection closed")

// errIdleClosed closes a pipelined connection left idle for the pool's
// IdleTimeout; no call fails with it (the session had none).
var errIdleClosed = errors.New("redigo: pipelined connection closed after the pool's IdleTimeout")

// pipeDriver is the redigo driver with auto-pipelining (WithPipelining):
// calls from all goroutines are written to a few long-lived connections in
// batches and their replies read back in order, so that under concurrency one
// write and one read system call — on both sides of the socket — serve many
// calls. The pool's Dial function opens the connections; Listen is the plain
// driver's.
type pipeDriver struct {
	*redigoDriver
	conns []*pipeConn
}

// newPipelined returns the driver of WithPipelining: every script call is
// multiplexed onto conns connections (at least one; see pick) dialled with
// pool's Dial function, and pipelined: a caller that finds nobody writing
// writes its call and every call queued meanwhile with one write, and the
// replies are read back in order (see pipeSession). Under concurrency this
// serves many calls per system call on both the client and the server.
//
// The pool itself is used only for Listen's dial. Each caller waits no
// longer than its context's deadline. A connection that stays silent for
// stall while calls are in flight is closed and every call on it fails; the
// next call dials a new one.
func newPipelined(pool *redis.Pool, conns int, stall time.Duration) *pipeDriver {
	d := &pipeDriver{redigoDriver: &redigoDriver{pool: pool}}
	for range max(conns, 1) {
		d.conns = append(d.conns, &pipeConn{dial: d.dial, stall: stall, idle: pool.IdleTimeout})
	}
	return d
}

func (d *pipeDriver) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	pc := d.pick()
	c := callPool.Get().(*pipeCall)
	c.args = scriptArgs(c.argv[:0], s, keys, args)
	v, err, done := pc.do(ctx, "EVALSHA", c)
	if done && isNoScript(err) {
		c.args[0] = s.SourceArg()
		v, err, done = pc.do(ctx, "EVAL", c)
	}
	if done {
		// Answered: the session holds c no more (an abandoned call it
		// still holds is left to the garbage collector).
		clear(c.args)
		c.args, c.reply, c.err = nil, nil, nil
		callPool.Put(c)
	}
	if err != nil {
		return nil, err
	}
	return driver.NormalizeReply(v), nil
}

// pick returns the connection for a call. The first connection takes
// every call, so that concurrent calls share its writes and reads, except
// a call that finds it holding exactly one call: that one goes to another
// connection holding none, if there is one, where it writes and reads its
// own call as the first connection's lone caller does. Two callers taking
// turns with Redis thus each have a connection of their own, with no
// hand-off between goroutines, and many callers still batch on one.
func (d *pipeDriver) pick() *pipeConn {
	first := d.conns[0]
	if len(d.conns) == 1 || first.calls.Load() != 1 {
		return first
	}
	for _, pc := range d.conns[1:] {
		if pc.calls.Load() == 0 {
			return pc
		}
	}
	return first
}

// callPool recycles the calls that were answered: a call, its two
// channels, its timer and its argument list are allocated otherwise.
var callPool = sync.Pool{New: func() any {
	return &pipeCall{done: make(chan struct{}, 1), lead: make(chan struct{}, 1)}
}}

// Close is called by Locker.Close: it closes the pipelined connections
// (calls in flight fail) besides the reserved one.
func (d *pipeDriver) Close() error {
	for _, pc := range d.conns {
		pc.close()
	}
	return d.redigoDriver.Close()
}

// pipeConn is one pipelined connection slot: the live session on it, dialled
// on first use and again after it broke.
type pipeConn struct {
	dial  func(context.Context) (redis.Conn, error)
	stall time.Duration
	// idle is the pool's IdleTimeout (0: none): a session unused that long
	// is closed and a new one dialled, as the pool would close an idle
	// connection, since a server timeout or a proxy may have cut it
	// meanwhile without the session knowing until a call failed on it.
	idle time.Duration

	calls atomic.Int32 // callers in do: see pick

	mu     sync.Mutex
	s      *pipeSession
	used   time.Time // when the last call took s
	closed bool
}

// pipeCall is one queued command and, once answered, its reply. Calls
// are recycled (callPool): do resets one for each use.
type pipeCall struct {
	cmd      string
	args     []any
	argv     [12]any     // args' storage, for the usual script call
	deadline time.Time   // zero: none
	timer    *time.Timer // bounds a wait for a reply that another reader reads
	reply    any
	err      error
	fin      atomic.Bool   // answered (set before the signal on done)
	done     chan struct{} // cap 1: signalled once, when answered; received once, by the caller
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

// finish answers c, once. c's caller may reuse c as soon as it has the
// signal, so finish touches c no more after sending it.
func (c *pipeCall) finish(v any, err error) {
	c.reply, c.err = v, err
	c.fin.Store(true)
	c.done <- struct{}{}
}

func (c *pipeCall) answered() bool { return c.fin.Load() }

// isClosed reports whether ch is closed (it is only ever closed, never sent on).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// do sends cmd with c.args and waits for the reply. done reports that c
// was answered (or never submitted), so that the caller may reuse it: a
// call whose caller left is still held by the session.
func (pc *pipeConn) do(ctx context.Context, cmd string, c *pipeCall) (v any, err error, done bool) {
	if err := ctx.Err(); err != nil {
		return nil, driver.NotSent(err), true
	}
	pc.calls.Add(1)
	defer pc.calls.Add(-1)
	c.cmd, c.deadline, c.reply, c.err = cmd, time.Time{}, nil, nil
	c.fin.Store(false)
	c.offered, c.abandoned = false, false
	select {
	case <-c.lead: // an offer its last caller never took
	default:
	}
	now := time.Now()
	if dl, ok := ctx.Deadline(); ok {
		if !now.Before(dl) {
			return nil, driver.NotSent(context.DeadlineExceeded), true
		}
		c.deadline = dl
	}
	s, err := pc.submit(ctx, c, now)
	if err != nil {
		return nil, err, true // never queued
	}
	return s.await(ctx, c)
}

// submit hands c to the live session and returns it. A session that died
// or was retired before taking the call has not written it, so one more
// session is worth a try.
func (pc *pipeConn) submit(ctx context.Context, c *pipeCall, now time.Time) (*pipeSession, error) {
	for attempt := 0; ; attempt++ {
		s, err := pc.session(ctx, now)
		if err != nil {
			return nil, driver.NotSent(err)
		}
		if s.submit(c, now) {
			return s, nil
		}
		if attempt > 0 {
			if s.retired.Load() {
				return nil, driver.NotSent(errPipeClosed)
			}
			<-s.dead
			return nil, driver.NotSent(s.err)
		}
	}
}

// session returns the live session, dialling one when there is none or
// the live one was retired. now is the time of the call.
func (pc *pipeConn) session(ctx context.Context, now time.Time) (*pipeSession, error) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.closed {
		return nil, errPipeClosed
	}
	if pc.s != nil && !pc.s.broken() && !pc.s.retired.Load() {
		if pc.idle <= 0 || now.Sub(pc.used) < pc.idle {
			pc.used = now
			return pc.s, nil
		}
		if pc.s.retireIdle() {
			pc.s.fail(errIdleClosed)
		} else {
			pc.used = now
			return pc.s, nil // busy, so not idle after all
		}
	}
	conn, err := pc.dial(ctx)
	if err != nil {
		return nil, err
	}
	pc.s, pc.used = startSession(conn, pc.stall), now
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
