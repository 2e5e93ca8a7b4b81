// Package admin is the operator's side of the engine: Inspect, List and
// ForceRelease, written once over a backend's backend.Admin (one
// deployment's node, or every Redlock master, with its quorum) and over
// key names built by names.Layout. It parses the operator scripts'
// replies and merges Redlock masters' views. Its View, Holder and Waiter
// mirror locker's State, Holder and Waiter field for field, so locker
// converts them without copying rules.
package admin

import "time"

// The lock kinds (locker.KindMutex ...).
const (
	kindMutex     = "mutex"
	kindSemaphore = "semaphore"
	kindRW        = "read/write"
)

// maxWaiters caps the waiters one Inspect returns; View.Queued says how
// many there are.
const maxWaiters = 1000

// View is one lock's state (locker.State).
type View struct {
	Name    string
	Kind    string
	Holder  *Holder
	Holders []Holder
	Limit   int
	Waiters []Waiter
	Queued  int
}

// Holder is one holder of a lock (locker.Holder).
type Holder struct {
	Owner     string
	Fence     int64
	Holds     int
	LeaseLeft time.Duration
	Label     string
	Held      time.Duration
	Mode      string
}

// Waiter is one queued Obtain call (locker.Waiter).
type Waiter struct {
	Owner    string
	Waited   time.Duration
	WaitLeft time.Duration
	Label    string
	Mode     string
}

// Freed is one holder a force-release freed, with its lock's kind.
type Freed struct {
	Kind string
	Holder
}
