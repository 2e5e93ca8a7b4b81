package scripts

import (
	"fmt"
	"time"
)

// Script modes (see the scripts' headers).
const (
	ModeAcquire = "a" // acquire.lua: take or queue with a new token (a retried call is idempotent)
	ModeReenter = "e" // acquire.lua: add a hold with a held lock's token
	ModeRecheck = "r" // acquire.lua: a queued waiter asks whether it holds the lock
	ModeNotify  = "n" // acquire.lua: try without queueing; a busy lock publishes a free notice on release
	ModeKeep    = "k" // leave.lua: keep the lock if it was handed over
	ModeDrop    = "r" // leave.lua: release the lock if it was handed over
)

// Hand-over on release (see free in common.lua).
const (
	HandoffGrant  = "g" // one node: the queue's head becomes the owner
	HandoffNotify = "n" // Redlock: publish a free notice, waiters try again
)

// Reply statuses of acquire.lua and leave.lua.
const (
	StatusBusy      = 0
	StatusObtained  = 1
	StatusReentered = 2
)

// Reply is acquire.lua's and leave.lua's answer.
type Reply struct {
	Status int64
	Fence  int64
	Holds  int64
	PTTL   time.Duration
	Server int64 // server clock, ms
	Fast   bool  // the fence alone: a free lock this very call wrote
}

// ParseReply reads a reply to a call that asked for ttl. A plain integer
// is the fence of a free lock taken with the whole ttl (see acquire.lua):
// one boxed integer where the array costs the client an allocation per
// element.
func ParseReply(v any, ttl time.Duration) (Reply, error) {
	if f, ok := v.(int64); ok {
		return Reply{Status: StatusObtained, Fence: f, Holds: 1, PTTL: time.Duration(MS(ttl)) * time.Millisecond, Fast: true}, nil
	}
	a, ok := v.([]any)
	if !ok || len(a) != 5 {
		return Reply{}, fmt.Errorf("locker: unexpected script reply %v", v)
	}
	var n [5]int64
	for i := range n {
		x, ok := a[i].(int64)
		if !ok {
			return Reply{}, fmt.Errorf("locker: unexpected script reply %v", v)
		}
		n[i] = x
	}
	return Reply{Status: n[0], Fence: n[1], Holds: n[2], PTTL: time.Duration(n[3]) * time.Millisecond, Server: n[4]}, nil
}

// MS is d in whole milliseconds as the scripts take it: a positive d
// below one millisecond is 1, never 0 (which scripts read as "none").
func MS(d time.Duration) int64 {
	m := d.Milliseconds()
	if m < 1 && d > 0 {
		m = 1
	}
	return m
}
