package locker

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/locktag/locktag/locker/driver"
)

//go:embed scripts/inspect.lua
var luaInspect string

var scriptInspect = driver.NewScript(luaInspect)

// maxInspectWaiters caps the waiters one Inspect returns; State.Queued
// says how many there are.
const maxInspectWaiters = 1000

// State is what Inspect found for one lock at one moment.
type State struct {
	// Name is the lock's name, as given to Obtain.
	Name string
	// Holder is the lock's holder, or nil when the lock is free.
	Holder *Holder
	// Waiters are the queued Obtain calls in queue order (the first is
	// granted the lock next), at most 1000 of them.
	Waiters []Waiter
	// Queued is the length of the queue; more than len(Waiters) when
	// the list was cut.
	Queued int
}

// Holder is a lock's current holder.
type Holder struct {
	// Owner is the holder's owner token (random, one per Obtain).
	Owner string
	// Fence is the fencing token the lock was granted with.
	Fence int64
	// Holds is the hold count: above 1 when re-entered.
	Holds int
	// LeaseLeft is the lease left in Redis: the lock expires then unless
	// renewed (the watchdog renews it every WithWatchdog interval).
	LeaseLeft time.Duration
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
}

// Inspect returns the state of the lock named name: its holder and its
// waiters, read in one read-only script on the lock's node. It changes
// nothing, so it is safe on a production lock; the state may change the
// moment after. It returns an error matching ErrUnavailable when Redis
// failed, ErrEmptyKey for an empty name, and one matching
// errors.ErrUnsupported on a Redlock Locker (each master has its own
// view; inspect the masters one by one with a Locker from New).
func (l *Locker) Inspect(ctx context.Context, name string) (*State, error) {
	if name == "" {
		return nil, ErrEmptyKey
	}
	s, ok := l.be.(*single)
	if !ok {
		return nil, fmt.Errorf("locker: Inspect on a Redlock Locker: %w", errors.ErrUnsupported)
	}
	n, _ := l.holder(name)
	cctx, cancel := l.o.callCtx(ctx)
	defer cancel()
	v, err := s.nd.drv.Eval(cctx, scriptInspect, n.keys.First(4), maxInspectWaiters)
	if err != nil {
		return nil, unavailable(err)
	}
	st, err := parseState(name, v)
	if err != nil {
		return nil, unavailable(err)
	}
	return st, nil
}

// parseState reads inspect.lua's reply.
func parseState(name string, v any) (*State, error) {
	a, ok := v.([]any)
	if len(a) < 5 || (len(a)-5)%3 != 0 || !ok {
		return nil, fmt.Errorf("locker: inspect: unexpected reply %v", v)
	}
	st := &State{Name: name}
	queued, _ := a[4].(int64)
	st.Queued = int(queued)
	sec, _ := strconv.ParseInt(str(a[2]), 10, 64)
	usec, _ := strconv.ParseInt(str(a[3]), 10, 64)
	nowUS := sec*1_000_000 + usec
	if val := str(a[0]); val != "" {
		f := strings.Fields(val) // "owner fence holds waiting"
		if len(f) != 4 {
			return nil, fmt.Errorf("locker: inspect: unexpected lock value of %d fields", len(f))
		}
		fence, _ := strconv.ParseInt(f[1], 10, 64)
		holds, _ := strconv.Atoi(f[2])
		pttl, _ := a[1].(int64)
		st.Holder = &Holder{Owner: f[0], Fence: fence, Holds: holds, LeaseLeft: time.Duration(max(pttl, 0)) * time.Millisecond}
	}
	for i := 5; i < len(a); i += 3 {
		w := Waiter{Owner: str(a[i])}
		if arrived, err := strconv.ParseFloat(str(a[i+1]), 64); err == nil {
			w.Waited = time.Duration(nowUS-int64(arrived)) * time.Microsecond
		}
		// details: "deadline_ms ttl_ms sid"
		if f := strings.Fields(str(a[i+2])); len(f) == 3 {
			if deadline, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				w.WaitLeft = time.Duration(deadline-nowUS/1000) * time.Millisecond
			}
		}
		st.Waiters = append(st.Waiters, w)
	}
	return st, nil
}

// str returns a reply element as a string ("" for anything else).
func str(v any) string {
	s, _ := v.(string)
	return s
}
