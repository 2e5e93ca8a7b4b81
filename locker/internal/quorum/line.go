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
// While a lock obtained through the line is held in this process, the
// line remembers it: the next call to wait for it (queued behind, or
// arriving later) waits for its release here (Release and Keep wake it)
// or for its lease's end, and tries then, with no failed round and no
// registration on the masters. A leader that gives up passes the turn on
// at once; the next one tries unless the lock is held here.

// lines are a Backend's lines by key channel.
type lines struct {
	mu      sync.Mutex
	m       map[string]*line
	sweepAt int // the map's size at which lines of leases over are dropped
}

// line is one key's waiting calls, first come first served; the front is
// the leader; and the lock a call of the line obtained while it is held
// here. lines.mu guards it.
type line struct {
	q      list.List // of *turn
	holder string    // the token of that lock, "" for none
	until  time.Time // when its lease ends
}

// heldHere reports whether the line's lock is held in this process.
func (ln *line) heldHere() bool {
	if ln.holder != "" && !time.Now().Before(ln.until) {
		ln.holder = ""
	}
	return ln.holder != ""
}

// turn is one waiting call's place in its line.
type turn struct {
	w    *hub.Waiter   // its Check wakes the leader: a free notice, a local release
	lead chan struct{} // closed when the call becomes the leader
	e    *list.Element
	// Set before lead is closed: the lock is held in this process (a call
	// of the line obtained it) until about until (its lease's end): wait
	// for its release rather than try at once.
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
	ln := ls.m[channel]
	if ln == nil {
		if ls.m == nil {
			ls.m = make(map[string]*line)
		}
		if len(ls.m) >= ls.sweepAt {
			ls.sweepLocked()
		}
		ln = &line{}
		ls.m[channel] = ln
	}
	tn.e = ln.q.PushBack(tn)
	if ln.q.Front() == tn.e {
		tn.held, tn.until = ln.heldHere(), ln.until
		close(tn.lead)
	}
	return tn
}

// sweepLocked drops the lines with nobody waiting whose lock's lease is
// over (a lease never released); ls.mu is held.
func (ls *lines) sweepLocked() {
	for ch, ln := range ls.m {
		if ln.q.Len() == 0 && !ln.heldHere() {
			delete(ls.m, ch)
		}
	}
	ls.sweepAt = max(256, 2*len(ls.m))
}

// leave takes tn out of channel's line. A leader that obtained the lock
// for token, its lease ending at until, leaves it recorded as held here;
// a leader passes the turn on.
func (ls *lines) leave(channel string, tn *turn, token string, obtained bool, until time.Time) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ln := ls.m[channel]
	if ln == nil || tn.e == nil {
		return
	}
	first := ln.q.Front() == tn.e
	ln.q.Remove(tn.e)
	tn.e = nil
	if obtained {
		ln.holder, ln.until = token, until
	}
	switch {
	case ln.q.Len() == 0:
		if !ln.heldHere() {
			delete(ls.m, channel)
		}
	case first:
		next := ln.q.Front().Value.(*turn)
		next.held, next.until = ln.heldHere(), ln.until
		close(next.lead)
	}
}

// freed wakes the leader of channel's line, if any: this process released
// token's lock on that key (or kept it for a while).
func (ls *lines) freed(channel, token string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ln := ls.m[channel]
	if ln == nil {
		return
	}
	if ln.holder == token {
		ln.holder = ""
	}
	if ln.q.Len() == 0 {
		if ln.holder == "" {
			delete(ls.m, channel)
		}
		return
	}
	select {
	case ln.q.Front().Value.(*turn).w.Check <- struct{}{}:
	default:
	}
}
