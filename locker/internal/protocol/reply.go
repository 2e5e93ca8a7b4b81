package protocol

import (
	"fmt"
	"time"
)

// AcquireMode is acquire.lua's mode argument: what the call asks of the
// lock. Its values are the wire protocol's (docs/protocol.md); a call
// passes it as a plain string (Arg).
type AcquireMode string

// acquire.lua's modes.
const (
	AcquireNew     AcquireMode = "a" // take or queue with a new token (a retried call is idempotent)
	AcquireReenter AcquireMode = "e" // add a hold with a held lock's token
	AcquireRecheck AcquireMode = "r" // a queued waiter asks whether it holds the lock
	AcquireNotify  AcquireMode = "n" // try without queueing; a busy lock publishes a free notice on release
)

// Arg is m as a script argument: the plain string every driver sends.
func (m AcquireMode) Arg() string { return string(m) }

// LeaveMode is leave.lua's mode argument: what becomes of a lock handed
// to the leaving waiter meanwhile. Its values are the wire protocol's
// (docs/protocol.md); a call passes it as a plain string (Arg).
type LeaveMode string

// leave.lua's modes.
const (
	LeaveKeepGrant    LeaveMode = "k" // keep the lock if it was handed over
	LeaveReleaseGrant LeaveMode = "r" // release the lock if it was handed over
)

// Arg is m as a script argument: the plain string every driver sends.
func (m LeaveMode) Arg() string { return string(m) }

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
