package redigo

import (
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

// afterBatch, when set (tests only), runs after each batch a writer sends.
var afterBatch atomic.Pointer[func()]

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
	reading     bool // a caller or the helper holds the reader role
	// writer is the writing caller's own call while it writes more batches
	// after its first: its caller cannot read until it is done writing, so
	// the role is not offered to it meanwhile.
	writer *pipeCall
	readDL time.Time // the reader's read deadline (zero: the helper's, none)

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
		if c.offered && s.writer == nil {
			// The reader role went to this writer's own call, but more
			// calls came meanwhile: the helper reads while this caller
			// writes them, so the replies do not wait behind the writes.
			select {
			case <-c.lead:
				c.offered = false
				s.writer = c
				s.kickHelper()
			default:
			}
		}
		batch := s.queue
		s.queue = s.spare[:0]
		s.mu.Unlock()
		err := s.write(batch)
		clear(batch)
		if f := afterBatch.Load(); f != nil {
			(*f)()
		}
		s.mu.Lock()
		s.spare = batch[:0]
		if err != nil {
			for _, q := range s.queue {
				q.finish(nil, s.err)
			}
			s.queue = s.queue[:0]
		}
	}
	s.writing, s.writer = false, nil
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
