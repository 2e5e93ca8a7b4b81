package quorum

import (
	"container/list"
	"sync"
	"time"

	"github.com/locktag/locktag/locker/internal/hub"
)

// A key's waiting Obtain calls in one process form a line: only its head,
// the leader, tries on the masters (and registers there for free
// notices); the others wait for their turn without a command. Without
// it every waiter would try at every release, and all but one would fail:
// a failed round is a script call on every master, so an acquisition's
// cost grew with the number of waiters. Across processes each line's
// leader competes as every waiter did before.
//
// When the leader obtains the lock, the next in line becomes the leader
// while the lock is held in this process: it waits for that lock's
// release here (Release and Keep wake it) or for its lease's end, and
// tries then. A leader that gives up passes the turn on at once; the next
// one tries.

// lines are a Backend's lines by key channel.
type lines struct {
	mu sync.Mutex
	m  map[string]*line
}

// line is one key's waiting calls, first come first served; the front is
// the leader. lines.mu guards it.
type line struct {
	q list.List // of *turn
}

// turn is one waiting call's place in its line.
type turn struct {
	w    *hub.Waiter   // its Check wakes the leader: a free notice, a local release
	lead chan struct{} // closed when the call becomes the leader
	e    *list.Element
	// Set before lead is closed: the lock was obtained by the leader before
	// this one and is held in this process until about until (its lease's
	// end): wait for its release rather than try at once.
	held  bool
	until time.Time
	// waiting: the call has counted itself as waiting (Hooks.Waiting).
	waiting bool
}

// enter queues a call on channel's line; it leads at once when the line was
// empty.
func (ls *lines) enter(channel string, w *hub.Waiter) *turn {
	tn := &turn{w: w, lead: make(chan struct{})}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.m == nil {
		ls.m = make(map[string]*line)
	}
	ln := ls.m[channel]
	if ln == nil {
		ln = &line{}
		ls.m[channel] = ln
	}
	tn.e = ln.q.PushBack(tn)
	if ln.q.Front() == tn.e {
		close(tn.lead)
	}
	return tn
}

// leave takes tn out of channel's line. A leader passes the turn on: when
// it obtained the lock (its lease ending at until), the next leader knows
// the lock is held here.
func (ls *lines) leave(channel string, tn *turn, obtained bool, until time.Time) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ln := ls.m[channel]
	if ln == nil || tn.e == nil {
		return
	}
	first := ln.q.Front() == tn.e
	ln.q.Remove(tn.e)
	tn.e = nil
	if ln.q.Len() == 0 {
		delete(ls.m, channel)
		return
	}
	if first {
		next := ln.q.Front().Value.(*turn)
		next.held, next.until = obtained, until
		close(next.lead)
	}
}

// freed wakes the leader of channel's line, if any: a lock on that key was
// released (or kept for a while) by this process.
func (ls *lines) freed(channel string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ln := ls.m[channel]; ln != nil {
		select {
		case ln.q.Front().Value.(*turn).w.Check <- struct{}{}:
		default:
		}
	}
}
