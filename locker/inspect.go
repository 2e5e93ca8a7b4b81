package locker

import (
	"context"
	"time"

	"github.com/locktag/locktag/locker/internal/admin"
)

// State is what Inspect found for one lock name at one moment.
type State struct {
	// Name is the lock's name, as given to Obtain.
	Name string
	// Kind is the lock's kind: "mutex", "semaphore" or "read/write"
	// (KindMutex ...), or "" when nothing exists for the name. A name
	// used with several kinds (they are apart) shows the first that
	// exists, in that order.
	Kind string
	// Holder is the exclusive holder (a mutex's, or a read/write lock's
	// writer), or nil when there is none.
	Holder *Holder
	// Holders are every holder: the mutex's holder, each reader and the
	// writer, each permit of a semaphore (in the order their leases end).
	Holders []Holder
	// Limit is a semaphore's number of permits, as its last holder or
	// waiter asked for it; 0 for the other kinds.
	Limit int
	// Waiters are the queued Obtain calls in queue order (the first is
	// granted the lock next), at most 1000 of them.
	Waiters []Waiter
	// Queued is the length of the queue; more than len(Waiters) when
	// the list was cut.
	Queued int
}

// The lock kinds of State.Kind.
const (
	KindMutex     = "mutex"
	KindSemaphore = "semaphore"
	KindRW        = "read/write"
)

// Holder is one holder of a lock.
type Holder struct {
	// Owner is the holder's owner token (random, one per Obtain).
	Owner string
	// Fence is the fencing token the lock was granted with (a reader's
	// is the last writer's).
	Fence int64
	// Holds is the hold count: above 1 when re-entered.
	Holds int
	// LeaseLeft is the lease left in Redis: the lock expires then unless
	// renewed (the watchdog renews it every WithWatchdog interval).
	LeaseLeft time.Duration
	// Label describes the holder (WithLabel and Params.Label), or "".
	Label string
	// Held is how long ago the holder obtained the lock (server clock).
	Held time.Duration
	// Mode is a read/write lock holder's: "read" or "write", else "".
	Mode string
}

// Waiter is one queued Obtain call.
type Waiter struct {
	// Owner is the owner token the waiter will hold the lock with.
	Owner string
	// Waited is how long it has been queued, by the Redis server's clock.
	Waited time.Duration
	// WaitLeft is how long it will still wait, as it told Redis; zero or
	// less: it gave up, and the next grant clears its entry.
	WaitLeft time.Duration
	// Label describes the waiter as it will describe the holder, or "".
	Label string
	// Mode is a read/write lock waiter's: "read" or "write", else "".
	Mode string
}

// Inspect returns the holders and waiters of the lock named name, whatever
// its kind, read by one read-only script (Redlock: what a majority agrees
// on, else a *QuorumError). Errors: ErrUnavailable, ErrEmptyKey. See
// docs/operations.md#who-holds-a-lock-who-waits-inspect-and-list.
func (l *Locker) Inspect(ctx context.Context, name string) (*State, error) {
	if name == "" {
		return nil, ErrEmptyKey
	}
	v, err := admin.Inspect(ctx, l.admin(), &l.sh.Layout, name, l.o.callTimeout)
	if err != nil {
		return nil, quorumError(err)
	}
	return state(v), nil
}
