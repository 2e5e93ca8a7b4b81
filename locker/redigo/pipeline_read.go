package redigo

import (
	"context"
	"fmt"
	"time"

	"github.com/gomodule/redigo/redis"
)

// The reader role of a pipeSession and its watchdog.

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
	case len(s.inflight) == 1 && !s.inflight[0].abandoned && s.inflight[0] != s.writer && s.canLead(s.inflight[0], time.Now()):
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
			if h := s.inflight[0]; len(s.inflight) == 1 && !h.abandoned && h != s.writer && s.canLead(h, time.Now()) {
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
