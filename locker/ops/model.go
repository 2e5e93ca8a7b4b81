package ops

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/locktag/locktag/locker"
)

// maxNameBytes bounds a lock name given to the handler (?name=, a
// handle's content); longer ones are refused with 400.
const maxNameBytes = 4096

// listSteps bounds the List calls (SCAN steps) one page makes while
// collecting WithPageSize names, so a sparse keyspace costs a bounded
// amount per request; the page then ends early and its next cursor goes on.
const listSteps = 16

// inspectParallel is how many Inspect calls one page runs at once.
const inspectParallel = 4

// pageWaiters is how many waiters of each lock the HTML page lists (the
// queue's head first); the rest are in the lock's JSON detail.
const pageWaiters = 5

// allWaiters asks lockOf for every waiter Inspect returned (the detail).
const allWaiters = -1

// Page is the answer of GET api/locks: one page of locks under a prefix.
type Page struct {
	// Prefix is the name prefix listed ("" for all).
	Prefix string `json:"prefix"`
	// Locks are the locks found held or with waiters, in listing order.
	Locks []Lock `json:"locks"`
	// Next is the cursor of the following page, "" after the last.
	Next string `json:"next"`
	// Redacted says the names are redacted (WithRedaction).
	Redacted bool `json:"redacted"`
	// Locker is the instance id of the Locker serving the page
	// (Locker.ID), which its log records carry too.
	Locker string `json:"locker"`
	// CanRelease says the caller may force-release at all (some rows
	// may still refuse; see Lock.CanRelease).
	CanRelease bool `json:"canRelease"`
	// Risks are what the Locker's start-up check found on the server and
	// accepted (Locker.Risks), e.g. an eviction policy allowed by
	// locker.WithEvictionAllowed.
	Risks []string `json:"risks,omitempty"`
	// Servers are what each Redis master, then each replica, said about
	// the settings a lock's guarantees depend on (Locker.ServerFacts),
	// read with the page; servers whose INFO is refused to the Locker's
	// user are left out.
	Servers []Server `json:"servers,omitempty"`
}

// Server is one Redis master's (or replica's) settings, as the API and
// the page show them (locker.ServerFacts).
type Server struct {
	// Replica: a replica, which a failover may promote; false for a
	// master.
	Replica bool `json:"replica,omitempty"`
	// Addr is a replica's host:port; "" for a master.
	Addr string `json:"addr,omitempty"`
	// MaxMemory is its maxmemory in bytes; 0: none.
	MaxMemory int64 `json:"maxMemory"`
	// Policy is its maxmemory-policy.
	Policy string `json:"policy"`
	// Evicting: a maxmemory with a policy but noeviction, under which a
	// held lock's key may be evicted.
	Evicting bool `json:"evicting"`
	// EvictedKeys counts the keys it evicted since it started.
	EvictedKeys int64 `json:"evictedKeys"`
	// AOF: appendonly is on.
	AOF bool `json:"aof"`
}

// servers reads what lk's masters and replicas say
// (Locker.ServerFacts); none when they do not answer, which the lock list
// reports.
func servers(ctx context.Context, lk *locker.Locker) []Server {
	facts, _ := lk.ServerFacts(ctx)
	var out []Server
	for _, f := range facts {
		if f.Known {
			out = append(out, Server{Replica: f.Replica, Addr: f.Addr, MaxMemory: f.MaxMemory, Policy: f.Policy, Evicting: f.Evicting(), EvictedKeys: f.EvictedKeys, AOF: f.AOF})
		}
	}
	return out
}

// Lock is one lock's state, as the API and the page show it.
type Lock struct {
	// Handle identifies the lock in api/lock and api/release: the name,
	// readable, or an opaque encrypted handle when names are redacted.
	Handle string `json:"handle"`
	// Name is the lock's name, or its redaction.
	Name string `json:"name"`
	// Kind is "mutex", "semaphore" or "read/write" (locker.KindMutex...).
	Kind string `json:"kind"`
	// Limit is a semaphore's limit (0 otherwise).
	Limit int `json:"limit,omitempty"`
	// Holders hold the lock now (several for a semaphore or readers).
	Holders []Holder `json:"holders"`
	// Queued is how many Obtain calls wait in the lock's queue now.
	Queued int `json:"queued"`
	// LongestWaitMs is how long the first listed waiter has waited, in
	// milliseconds (0 without waiters).
	LongestWaitMs int64 `json:"longestWaitMs"`
	// GaveUp counts listed waiters whose wait is over: their callers gave
	// up, and their entries are cleared by the next grant.
	GaveUp int `json:"gaveUp"`
	// Waiters lists the queue, head first: in api/lock's detail (at most
	// 1000), and the first few on the HTML page; never in api/locks.
	Waiters []Waiter `json:"waiters,omitempty"`
	// CanRelease says the caller may force-release this lock.
	CanRelease bool `json:"canRelease"`
}

// Holder is one holder of a lock.
type Holder struct {
	// Label describes the holder (locker.WithLabel, Params.Label; the
	// adapters' lock guards set the route and the trace id), or "".
	Label string `json:"label,omitempty"`
	// Mode is "read" or "write" for a read/write lock's holder.
	Mode string `json:"mode,omitempty"`
	// Owner is the holder's owner token.
	Owner string `json:"owner"`
	// Fence is the fencing token it was granted with.
	Fence int64 `json:"fence"`
	// Holds is its hold count (above 1 when re-entered).
	Holds int `json:"holds"`
	// HeldMs is how long it has held the lock, in milliseconds (0 for a
	// lock taken before grant times were kept).
	HeldMs int64 `json:"heldMs"`
	// LeaseLeftMs is its lease left in Redis, in milliseconds, when read.
	LeaseLeftMs int64 `json:"leaseLeftMs"`
}

// Waiter is one queued Obtain call.
type Waiter struct {
	// Label describes the waiter as it will describe the holder, or "".
	Label string `json:"label,omitempty"`
	// Mode is "read" or "write" for a read/write lock's waiter.
	Mode string `json:"mode,omitempty"`
	// Owner is the owner token it will hold the lock with.
	Owner string `json:"owner"`
	// WaitedMs is how long it has waited, in milliseconds.
	WaitedMs int64 `json:"waitedMs"`
	// WaitLeftMs is how long it will still wait; 0 or less: it gave up.
	WaitLeftMs int64 `json:"waitLeftMs"`
}

// errPrefixTooLong: a prefix over maxNameBytes.
var errPrefixTooLong = errors.New("ops: prefix too long")

// errNotFound: the lock is neither held nor waited for.
var errNotFound = errors.New("ops: no such lock (not held, nobody waiting)")

// lockOf turns Inspect's state into a row with up to waiters of its
// waiters (allWaiters: every one); ok is false for a lock that is neither
// held nor waited for (gone between List and Inspect).
func (h *handler) lockOf(st *locker.State, waiters int) (Lock, bool) {
	holders := holdersOf(st)
	if len(holders) == 0 && st.Queued == 0 && len(st.Waiters) == 0 {
		return Lock{}, false
	}
	l := Lock{
		Handle:  h.handles.make(st.Name),
		Name:    h.display(st.Name),
		Holders: holders,
		Queued:  st.Queued,
	}
	l.Kind, l.Limit = st.Kind, st.Limit
	for i, w := range st.Waiters {
		if i == 0 {
			l.LongestWaitMs = w.Waited.Milliseconds()
		}
		if w.WaitLeft <= 0 {
			l.GaveUp++
		}
		if waiters == allWaiters || i < waiters {
			l.Waiters = append(l.Waiters, Waiter{Label: w.Label, Mode: w.Mode, Owner: w.Owner,
				WaitedMs: w.Waited.Milliseconds(), WaitLeftMs: w.WaitLeft.Milliseconds()})
		}
	}
	return l, true
}

// display is the name as shown: redacted when asked.
func (h *handler) display(name string) string {
	if h.o.redact != nil {
		return h.o.redact(name)
	}
	return name
}

// holdersOf reads the holders out of Inspect's state.
func holdersOf(st *locker.State) []Holder {
	out := make([]Holder, 0, len(st.Holders))
	for _, hd := range st.Holders {
		out = append(out, Holder{
			Label:       hd.Label,
			Mode:        hd.Mode,
			Owner:       hd.Owner,
			Fence:       hd.Fence,
			Holds:       hd.Holds,
			HeldMs:      hd.Held.Milliseconds(),
			LeaseLeftMs: hd.LeaseLeft.Milliseconds(),
		})
	}
	return out
}

// page lists up to pageSize locks under prefix from cursor and inspects
// each, keeping up to waiters of each lock's waiters. Errors are the
// Locker's.
func (h *handler) page(ctx context.Context, prefix, cursor string, waiters int) (*Page, error) {
	if len(prefix) > maxNameBytes {
		return nil, errPrefixTooLong
	}
	p := &Page{Prefix: prefix, Locks: []Lock{}, Redacted: h.o.redact != nil, Locker: h.lk.ID(), Risks: h.lk.Risks(), Servers: servers(ctx, h.lk)}
	var names []string
	seen := map[string]bool{}
	next := cursor
	for step := 0; step < listSteps && len(names) < h.o.pageSize; step++ {
		got, n, err := h.lk.List(ctx, prefix, next)
		if err != nil {
			return nil, err
		}
		for _, name := range got {
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
		if next = n; next == "" {
			break
		}
	}
	// A SCAN step may return more names than the page has room for: all
	// are kept, since the next cursor would not list them again.
	p.Next = next
	states := make([]*locker.State, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	sem := make(chan struct{}, inspectParallel)
	for i, name := range names {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			states[i], errs[i] = h.lk.Inspect(ctx, name)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, st := range states {
		if l, ok := h.lockOf(st, waiters); ok {
			p.Locks = append(p.Locks, l)
		}
	}
	return p, nil
}

// detail inspects one lock by name.
func (h *handler) detail(ctx context.Context, name string) (Lock, error) {
	st, err := h.lk.Inspect(ctx, name)
	if err != nil {
		return Lock{}, err
	}
	l, ok := h.lockOf(st, allWaiters)
	if !ok {
		return Lock{}, errNotFound
	}
	return l, nil
}

// leaseLeft formats a lease left for the page's first paint (the script
// takes over).
func leaseLeft(ms int64) string {
	if ms <= 0 {
		return "expired"
	}
	return fmt.Sprintf("%.1fs", time.Duration(ms*int64(time.Millisecond)).Seconds())
}

// duration formats milliseconds for the page.
func duration(ms int64) string {
	return time.Duration(ms * int64(time.Millisecond)).Round(100 * time.Millisecond).String()
}

// moreWaiters is how many of l's queued callers the page does not list.
func moreWaiters(l Lock) int { return max(l.Queued-len(l.Waiters), 0) }

// short shortens an owner token for the page (the full one is its title).
func short(s string) string {
	if len(s) <= 12 {
		return s
	}
	return s[:8] + "…"
}
