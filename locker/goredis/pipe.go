package goredis

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/locker/driver"
)

// A pipe runs the script calls of a *redis.Client on a few connections it
// holds out of the client's pool ([redis.Client.Conn]), instead of taking
// a pooled connection per call:
//
//   - A call that finds a held connection free (or may open one) sends
//     its command on it at once, from the caller's own goroutine: alone, it
//     costs what a command of the client costs, minus the pool's per-call
//     work (a health check with a system call and allocations).
//   - A call that finds every held connection busy queues. When a
//     connection comes free, the oldest queued call gets it and sends
//     every queued call in one pipeline: one write and one read, on both
//     sides of the socket, for the whole batch.
//
// A batch runs with the earliest deadline of its calls (the client applies
// it with ContextTimeoutEnabled), so none waits past its own; a queued
// call gives up at its deadline or cancellation: not sent while still
// queued, unknown once its batch was handed out.
//
// Held connections go back to the pool often, so that the pool's checks
// keep running as for pooled calls: one idle for holdIdle (a timer sees to
// it; a call never takes one idle that long), one held for holdMax, and
// one just taken from a pool that may have had it idle (see newHeld). A
// connection on which a call failed other than by a Redis error reply is
// closed; a call the client could not write at all (its connection closed
// underneath, as a Sentinel failover does) is tried again by eval.
type pipe struct {
	rdb *redis.Client
	max int // held connections at most
	// warm is set once a call through the client itself got a reply: see
	// do.
	warm atomic.Bool

	mu      sync.Mutex
	free    []*held // idle, the longest idle first
	open    int     // held connections, free or in use
	queue   []*call // waiting for a connection, oldest first
	closed  bool
	reaper  *time.Timer // returns idle connections to the pool
	reaping bool        // reaper armed
	putAt   time.Time   // when a held connection last went back to the pool
}

// held is one connection the pipe holds.
type held struct {
	conn    *redis.Conn
	pl      redis.Pipeliner // conn's pipeline, reused batch after batch
	idle    time.Time       // when it went back to the free list
	expires time.Time       // when it goes back to the pool once free
	bad     bool            // a call failed on it other than by a Redis reply
	bctx    batchContext    // its batches' context
}

// holdIdle is how long a held connection may stay idle before it goes back
// to the pool.
const holdIdle = time.Second

// holdMax is how long a connection is held at most. Over RESP3, go-redis
// checks a connection's socket for push notifications (a system call)
// before and after every command unless the connection came back to the
// pool within the last 5 seconds; holding one for less keeps its commands
// free of that check.
const holdMax = 3 * time.Second

// maxBatch bounds the calls of one pipeline.
const maxBatch = 128

// maxHeld bounds the connections a pipe holds.
const maxHeld = 2

// heldConns is how many connections the driver holds for a client whose
// pool has poolSize: a quarter of it, at most maxHeld, and none for a pool
// under 4 (every call then takes a pooled connection as other commands
// do).
func heldConns(poolSize int) int {
	return min(poolSize/4, maxHeld)
}

func newPipe(rdb *redis.Client, n int) *pipe {
	return &pipe{rdb: rdb, max: n}
}

// newHeld takes a connection to hold, the pool's next one. recent says a
// held connection went back to the pool just now, so that the pool hands
// that one out again, recently returned; otherwise the pool's next one
// may have been idle (or never returned) and is handed back after its
// first call, to be taken again as recently returned (see holdMax).
func newHeld(rdb *redis.Client, now time.Time, recent bool) *held {
	conn := rdb.Conn()
	h := &held{conn: conn, pl: conn.Pipeline(), expires: now}
	if recent {
		h.expires = now.Add(holdMax)
	}
	return h
}

// do sends c's command and waits for its reply, which is then in c.cmd.
// ok is false when c went to a batch its caller gave up on: the batch
// still holds c, which must not be reused. err, when not nil, is the
// call's error in place of the command's (the caller gave up waiting).
func (p *pipe) do(ctx context.Context, c *call) (ok bool, err error) {
	if !p.warm.Load() {
		// The client's first connection is made by the client itself, not
		// by a held one: a go-redis client's first connection may settle
		// options shared with every Conn (maintenance notifications'
		// mode), guarded by the client's lock, which a Conn does not take.
		if err := p.rdb.Process(ctx, c.cmd); !broken(err) {
			p.warm.Store(true)
		}
		return true, nil
	}
	now := time.Now()
	var stale []*held
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = p.rdb.Process(ctx, c.cmd)
		return true, nil
	}
	// The most recently used free connection; if even it was idle too
	// long, so were all the others.
	var h *held
	if n := len(p.free); n > 0 {
		if now.Sub(p.free[n-1].idle) < holdIdle {
			h = p.free[n-1]
			p.free[n-1] = nil
			p.free = p.free[:n-1]
		} else {
			stale, p.free = p.free, nil
			p.open -= len(stale)
		}
	}
	if h == nil && p.open >= p.max {
		c.deadline, c.has = ctx.Deadline()
		c.state = queued
		p.queue = append(p.queue, c)
		p.mu.Unlock()
		closeHeld(stale)
		return p.await(ctx, c)
	}
	fresh := h == nil
	if fresh {
		p.open++
	}
	recent := now.Sub(p.putAt) < holdIdle
	p.mu.Unlock()
	if len(stale) > 0 {
		closeHeld(stale)
		recent = true
	}
	if fresh {
		h = newHeld(p.rdb, now, recent)
	}
	if err := h.conn.Process(ctx, c.cmd); broken(err) {
		h.bad = true
	}
	p.mu.Lock()
	p.handOnLocked(h, now)
	p.mu.Unlock()
	return true, nil
}

// await waits for queued c to be answered or handed the lead, or for ctx
// to end.
func (p *pipe) await(ctx context.Context, c *call) (bool, error) {
	expired := c.expiry()
	select {
	case <-c.done:
		c.stopTimer()
	case <-ctx.Done():
		c.stopTimer()
		return p.giveUp(c, ctx.Err())
	case <-expired:
		return p.giveUp(c, context.DeadlineExceeded)
	}
	// Set before the signal, by whoever sent it.
	if c.state == leading {
		p.lead(ctx, c)
	}
	c.state = idle
	return true, nil
}

// giveUp ends the wait of queued c whose context ended with cause.
func (p *pipe) giveUp(c *call, cause error) (bool, error) {
	p.mu.Lock()
	switch c.state {
	case queued:
		// Never sent.
		if i := slices.Index(p.queue, c); i >= 0 {
			p.queue = slices.Delete(p.queue, i, i+1)
		}
		c.state = idle
		p.mu.Unlock()
		return true, driver.NotSent(cause)
	case batched:
		// Its batch may be on the wire already: the outcome is unknown,
		// and the batch writes the reply into c later.
		c.abandoned = true
		p.mu.Unlock()
		return false, cause
	case leading:
		// Handed the lead, not yet woken: pass it to the next call of the
		// batch, or hand the connection on; c itself was never sent.
		// (A call of the batch that gave up too is left out.)
		var next *call
		rest := c.batch[1:]
		for i, m := range rest {
			if !m.abandoned {
				next, rest = m, rest[i:]
				break
			}
		}
		if next != nil {
			next.batch = append(next.batch[:0], rest...)
			next.h, next.state = c.h, leading
			next.signal()
		} else {
			p.handOnLocked(c.h, time.Now())
		}
		clear(c.batch)
		c.batch, c.h, c.state = c.batch[:0], nil, idle
		p.mu.Unlock()
		<-c.done
		return true, driver.NotSent(cause)
	}
	// Answered meanwhile: take the reply.
	p.mu.Unlock()
	<-c.done
	return true, nil
}

// lead sends the batch handed to c on its connection, answers the others
// and hands the connection on.
func (p *pipe) lead(ctx context.Context, c *call) {
	h := c.h
	p.send(ctx, h, c.batch, c)
	p.mu.Lock()
	clear(c.batch)
	c.batch, c.h, c.state = c.batch[:0], nil, idle
	p.handOnLocked(h, time.Now())
	p.mu.Unlock()
}

// send sends batch on h and answers its calls but self.
func (p *pipe) send(ctx context.Context, h *held, batch []*call, self *call) {
	if len(batch) == 1 {
		if err := h.conn.Process(ctx, batch[0].cmd); broken(err) {
			h.bad = true
		}
	} else {
		// The batch's deadline is its calls' earliest; its values are the
		// sender's (a tracing hook sees the pipeline under its span).
		b := &h.bctx
		b.Context, b.dl, b.has = ctx, time.Time{}, false
		for _, m := range batch {
			if m.has && (!b.has || m.deadline.Before(b.dl)) {
				b.dl, b.has = m.deadline, true
			}
			_ = h.pl.Process(b, m.cmd)
		}
		_, _ = h.pl.Exec(b)
		b.Context = nil
		for _, m := range batch {
			if broken(m.cmd.Err()) {
				h.bad = true
				break
			}
		}
	}
	p.mu.Lock()
	for _, m := range batch {
		if m != self && !m.abandoned {
			m.state = finished
			m.signal()
		}
	}
	p.mu.Unlock()
}

// handOnLocked hands h on, p.mu held, now a recent reading of the clock:
// h goes to the oldest queued call with the others queued, or back to the
// free list. A bad or expired connection goes back to the pool first (a
// bad one is closed by it), replaced by a new one when calls wait.
func (p *pipe) handOnLocked(h *held, now time.Time) {
	if h.bad || (p.closed && len(p.queue) == 0) || !now.Before(h.expires) {
		_ = h.conn.Close()
		p.putAt = now
		if len(p.queue) == 0 {
			p.open--
			return
		}
		h = newHeld(p.rdb, now, !h.bad)
	}
	if len(p.queue) > 0 {
		n := min(len(p.queue), maxBatch)
		l := p.queue[0]
		l.batch = append(l.batch[:0], p.queue[:n]...)
		k := copy(p.queue, p.queue[n:])
		clear(p.queue[k:])
		p.queue = p.queue[:k]
		for _, m := range l.batch[1:] {
			m.state = batched
		}
		l.h, l.state = h, leading
		l.signal()
		return
	}
	h.idle = now
	p.free = append(p.free, h)
	if !p.reaping {
		p.reaping = true
		if p.reaper == nil {
			p.reaper = time.AfterFunc(holdIdle, p.reap)
		} else {
			p.reaper.Reset(holdIdle)
		}
	}
}

// reap returns the connections idle for holdIdle to the pool, and comes
// back for the others.
func (p *pipe) reap() {
	now := time.Now()
	p.mu.Lock()
	p.reaping = false
	n := 0
	for n < len(p.free) && now.Sub(p.free[n].idle) >= holdIdle {
		n++
	}
	old := slices.Clone(p.free[:n])
	k := copy(p.free, p.free[n:])
	clear(p.free[k:])
	p.free = p.free[:k]
	p.open -= n
	if len(p.free) > 0 && !p.closed {
		p.reaping = true
		p.reaper.Reset(holdIdle - now.Sub(p.free[0].idle))
	}
	if n > 0 {
		p.putAt = now
	}
	p.mu.Unlock()
	closeHeld(old)
}

// close returns the free connections to the pool now and the busy ones
// when their calls end; later calls go through the client.
func (p *pipe) close() {
	p.mu.Lock()
	p.closed = true
	old := p.free
	p.free = nil
	p.open -= len(old)
	if p.reaper != nil {
		p.reaper.Stop()
	}
	p.mu.Unlock()
	closeHeld(old)
}

func closeHeld(hs []*held) {
	for _, h := range hs {
		_ = h.conn.Close()
	}
}

// broken reports whether a call's error leaves its connection unusable:
// anything but a Redis error reply (a nil reply included).
func broken(err error) bool {
	if err == nil || err == redis.Nil {
		return false
	}
	var re redis.Error
	return !errors.As(err, &re)
}

// batchContext is a batch's context: the leader's values, no cancellation,
// the batch's deadline.
type batchContext struct {
	context.Context
	dl  time.Time
	has bool
}

func (b *batchContext) Deadline() (time.Time, bool) { return b.dl, b.has }
func (b *batchContext) Done() <-chan struct{}       { return nil }

func (b *batchContext) Err() error {
	if b.has && !time.Now().Before(b.dl) {
		return context.DeadlineExceeded
	}
	return nil
}
