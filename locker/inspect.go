package locker

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/scripts"
)

// maxInspectWaiters caps the waiters one Inspect returns; State.Queued
// says how many there are.
const maxInspectWaiters = 1000

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
	// Held is how long ago the holder obtained the lock, by the Redis
	// server's clock; 0 for a lock taken before grant times were kept.
	Held time.Duration
	// Mode is a read/write lock holder's: "read" or "write"; "" for the
	// other kinds.
	Mode string
}

// Waiter is one queued Obtain call.
type Waiter struct {
	// Owner is the owner token the waiter will hold the lock with.
	Owner string
	// Waited is how long it has been queued, by the Redis server's clock.
	Waited time.Duration
	// WaitLeft is how long it will still wait (its Params.Wait, or its
	// context's deadline, as it told Redis); zero or less: it gave up
	// and its entry is cleared by the next grant.
	WaitLeft time.Duration
	// Label describes the waiter as it will describe the holder, or "".
	Label string
	// Mode is a read/write lock waiter's: "read" or "write"; "" for the
	// other kinds.
	Mode string
}

// Inspect returns the state of the lock named name, whatever its kind: its
// holders and its waiters, read in one read-only script on the name's
// node. It changes nothing, so it is safe on a production lock; the state
// may change the moment after. It returns an error matching ErrUnavailable
// when Redis failed and ErrEmptyKey for an empty name.
//
// On a Redlock Locker the script runs on every master at once and the
// views are merged: the holder is the owner a majority of masters agree on
// (with the largest fence and hold count and the shortest lease left any
// of them reports), the waiters are those queued on a majority, in arrival
// order. Without a majority of answers it returns a *QuorumError.
func (l *Locker) Inspect(ctx context.Context, name string) (*State, error) {
	if name == "" {
		return nil, ErrEmptyKey
	}
	return l.inspect(ctx, name)
}

// inspectKeys are inspect.lua's keys for name: each kind's lock, queue
// and details.
func (l *Locker) inspectKeys(name string) driver.Keys {
	m, _ := l.holder(name)
	sem, _ := l.kindHolder(name, ":s", scripts.Sem, nil)
	rw, _ := l.kindHolder(name, ":rw", scripts.RW, nil)
	mk, sk, rk := m.Keys.Names(), sem.Keys.Names(), rw.Keys.Names()
	return driver.NewKeys(mk[0], mk[1], mk[2], sk[0], sk[1], sk[2], rk[0], rk[1], rk[2])
}

// parseState reads inspect.lua's reply.
func parseState(name string, v any) (*State, error) {
	bad := func() (*State, error) { return nil, fmt.Errorf("locker: inspect: unexpected reply %v", v) }
	a, _ := v.([]any)
	if len(a) < 6 {
		return bad()
	}
	sec, _ := strconv.ParseInt(str(a[0]), 10, 64)
	usec, _ := strconv.ParseInt(str(a[1]), 10, 64)
	nowUS := sec*1_000_000 + usec
	nowMS := nowUS / 1000
	st := &State{Name: name, Kind: str(a[2])}
	limit, _ := a[3].(int64)
	st.Limit = int(limit)
	nh, _ := a[4].(int64)
	i := 5
	if nh < 0 || len(a) < i+4*int(nh)+1 {
		return bad()
	}
	for range nh {
		h, err := parseHolder(str(a[i]), str(a[i+1]), a[i+2], str(a[i+3]), nowMS)
		if err != nil {
			return nil, err
		}
		st.Holders = append(st.Holders, h)
		i += 4
	}
	for j := range st.Holders {
		if h := &st.Holders[j]; st.Kind == KindMutex || h.Mode == "write" {
			st.Holder = h
		}
	}
	queued, _ := a[i].(int64)
	st.Queued = int(queued)
	i++
	if (len(a)-i)%4 != 0 {
		return bad()
	}
	for ; i < len(a); i += 4 {
		w := Waiter{Owner: str(a[i])}
		if arrived, err := strconv.ParseFloat(str(a[i+1]), 64); err == nil {
			w.Waited = time.Duration(nowUS-int64(arrived)) * time.Microsecond
		}
		// details: "deadline_ms ttl_ms sid[ label]"
		if f := strings.SplitN(str(a[i+2]), " ", 4); len(f) >= 3 {
			if deadline, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				w.WaitLeft = time.Duration(deadline-nowMS) * time.Millisecond
			}
			if len(f) == 4 {
				w.Label = f[3]
			}
		}
		switch str(a[i+3]) {
		case "r":
			w.Mode = "read"
		case "w":
			w.Mode = "write"
		}
		st.Waiters = append(st.Waiters, w)
	}
	return st, nil
}

// parseHolder reads one holder of inspect.lua's reply: its record is
// "fence holds[ granted[ label]]".
func parseHolder(owner, record string, left any, mode string, nowMS int64) (Holder, error) {
	f := strings.SplitN(record, " ", 4)
	if len(f) < 2 {
		return Holder{}, fmt.Errorf("locker: inspect: unexpected holder record of %d fields", len(f))
	}
	h := Holder{Owner: owner, Mode: mode}
	h.Fence, _ = strconv.ParseInt(f[0], 10, 64)
	h.Holds, _ = strconv.Atoi(f[1])
	if ms, _ := left.(int64); ms > 0 {
		h.LeaseLeft = time.Duration(ms) * time.Millisecond
	}
	if len(f) >= 3 {
		if granted, err := strconv.ParseInt(f[2], 10, 64); err == nil {
			h.Held = time.Duration(max(nowMS-granted, 0)) * time.Millisecond
		}
	}
	if len(f) == 4 {
		h.Label = f[3]
	}
	return h, nil
}

// str returns a reply element as a string ("" for anything else).
func str(v any) string {
	s, _ := v.(string)
	return s
}
