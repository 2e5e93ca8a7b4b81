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
// call and every call queued meanwhile with one write; one goroutine per
// connection reads the replies back in order and hands each to its caller.
// Under concurrency this serves many calls per system call on both the
// client and the server; a lone caller pays one goroutine hand-off for its
// reply.
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
		argv[0] = s.src
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
	cmd   string
	args  []any
	reply any
	err   error
	done  chan struct{}
}

func (pc *pipeConn) do(ctx context.Context, cmd string, args []any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var expired <-chan time.Time
	if dl, ok := ctx.Deadline(); ok {
		wait := time.Until(dl)
		if wait <= 0 {
			return nil, context.DeadlineExceeded
		}
		// ctx's Done need not fire at its deadline (the locker's call
		// contexts add a deadline without a timer).
		t := time.NewTimer(wait)
		defer t.Stop()
		expired = t.C
	}
	c := &pipeCall{cmd: cmd, args: args, done: make(chan struct{})}
	if err := pc.submit(ctx, c); err != nil {
		return nil, err
	}
	// A caller that leaves early leaves the connection alone: its reply is
	// read and dropped when it comes.
	select {
	case <-c.done:
		return c.reply, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-expired:
		return nil, context.DeadlineExceeded
	}
}

// submit hands c to the live session. A session that died before taking
// the call has not written it, so one more session is worth a try.
func (pc *pipeConn) submit(ctx context.Context, c *pipeCall) error {
	for attempt := 0; ; attempt++ {
		s, err := pc.session(ctx)
		if err != nil {
			return err
		}
		if s.submit(c) {
			return nil
		}
		if attempt > 0 {
			<-s.dead
			return s.err
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

// pipeSession is one dialled connection and its reader goroutine. There is
// no writer goroutine: the caller that finds nobody writing becomes the
// writer, sends its call and every call queued meanwhile, flushes once, and
// repeats while calls keep arriving (flat combining). A lone caller thus
// writes its own call without a hand-off; concurrent callers share writes.
// Written calls pass to the reader through sent, in the order written.
type pipeSession struct {
	conn  redis.Conn
	stall time.Duration
	sent  chan *pipeCall
	dead  chan struct{}

	mu      sync.Mutex
	queue   []*pipeCall // waiting for the active writer
	spare   []*pipeCall
	writing bool

	once sync.Once
	err  error // set before dead is closed
}

// pipeDepth bounds the calls written and not yet answered on one session;
// the writer waits for replies beyond it.
const pipeDepth = 1024

func startSession(conn redis.Conn, stall time.Duration) *pipeSession {
	s := &pipeSession{
		conn:  conn,
		stall: stall,
		sent:  make(chan *pipeCall, pipeDepth),
		dead:  make(chan struct{}),
	}
	go s.read()
	return s
}

func (s *pipeSession) broken() bool {
	select {
	case <-s.dead:
		return true
	default:
		return false
	}
}

// fail kills the session: the connection is closed, so writes and the
// reader stop, and every call in flight fails with err.
func (s *pipeSession) fail(err error) {
	s.once.Do(func() {
		s.err = err
		close(s.dead)
		_ = s.conn.Close()
	})
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
	if len(s.sent) > 0 {
		// Replies in flight will wake callers that call again at once:
		// yield once so that they join this write.
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
			s.fail(fmt.Errorf("locker: pipelined write: %w", err))
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

// write sends batch with one flush and hands each call to the reader.
func (s *pipeSession) write(batch []*pipeCall) error {
	for i, c := range batch {
		if err := s.conn.Send(c.cmd, c.args...); err != nil {
			for _, q := range batch[i:] {
				q.finish(nil, err)
			}
			s.drain(err)
			return err
		}
		s.sent <- c
	}
	err := s.conn.Flush()
	if err != nil || s.broken() {
		// The reader may have stopped before these calls reached it.
		s.drain(err)
	}
	return err
}

// drain fails the calls written but not yet taken by the reader, once the
// session is dead (the reader does the same when it stops).
func (s *pipeSession) drain(err error) {
	if err != nil {
		s.fail(fmt.Errorf("locker: pipelined write: %w", err))
	}
	for {
		select {
		case c := <-s.sent:
			c.finish(nil, s.err)
		default:
			return
		}
	}
}

func (s *pipeSession) read() {
	for {
		var c *pipeCall
		select {
		case c = <-s.sent:
		case <-s.dead:
			s.drain(nil)
			return
		}
		// A server silent for stall with a call in flight is taken for
		// dead (as a pooled connection past its deadline is closed). A
		// caller's own deadline does not break the connection: that
		// caller stops waiting, everyone else keeps theirs.
		v, err := redis.ReceiveWithTimeout(s.conn, s.stall)
		if _, isReply := err.(redis.Error); err != nil && !isReply {
			if !s.broken() {
				err = fmt.Errorf("locker: pipelined read: %w", err)
			}
			s.fail(err)
			c.finish(nil, s.err)
			continue
		}
		c.finish(v, err)
	}
}

func (c *pipeCall) finish(v any, err error) {
	c.reply, c.err = v, err
	close(c.done)
}
