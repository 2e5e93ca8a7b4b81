package locker

// The control channel tells a Locker that one of its leases was
// force-released, so the holder's context is cancelled at once rather
// than at its next renewal.
//
// Every Locker on one deployment subscribes to the same channel
// (controlChannel) on its hub's listener: lazily, when its first lease is
// made, so a Locker that never holds a lock opens no subscriber connection
// and no call of the hot path pays a round trip for it. The lock value
// does not record which Locker holds it, and need not: a force-release
// publishes "token[,token...] reason" to all, and each Locker looks the
// tokens up among its own leases (a leaseTable). Force-releases are rare
// operator actions, so the fan-out costs less than a write per acquire
// would.
//
// A notice missed (the listener broke, or the lease was made in the
// instant before it was registered) costs the holder the prompt
// cancellation only: its next renewal is refused and loses the lease.

import (
	"strings"
	"sync"

	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/keeper"
	"github.com/locktag/locktag/locker/internal/lockerr"
)

// controlChannel is the control channel's name for the key prefix.
func controlChannel(prefix string) string { return prefix + "ctl" }

// control makes nd's hub carry force-release notices to l.
func (l *Locker) control(nd *backend.Node) {
	nd.Hub.SetControl(controlChannel(l.o.prefix), l.notice)
	l.ctl = append(l.ctl, nd.Hub)
}

// notice acts on a force-release notice, "token[,token...] reason": each
// token among l's leases is force-released. A malformed notice does
// nothing.
func (l *Locker) notice(notice string) {
	tokens, reason, ok := strings.Cut(notice, " ")
	if !ok {
		return
	}
	for tok := range strings.SplitSeq(tokens, ",") {
		l.forced(tok, reason)
	}
}

// track registers a new root lease for force-release notices and makes
// sure the control channel is subscribed.
func (l *Locker) track(le *Lease) {
	if le.token == "" {
		return // a multi-key root: its parts are tracked
	}
	l.leases.Add(le.token, le)
	l.watchControl()
}

// untrack forgets an ended root lease.
func (l *Locker) untrack(le *Lease) { l.leases.Remove(le.token, le) }

// watchControl makes sure every hub's control channel is subscribed.
func (l *Locker) watchControl() {
	for _, h := range l.ctl {
		h.WatchControl()
	}
}

// forced ends the local lease with owner token, if any, as force-released
// for reason.
func (l *Locker) forced(token, reason string) {
	if le, ok := l.leases.Get(token); ok {
		cause := &lockerr.Forced{Reason: reason}
		le.finish(cause, keeper.Forced, cause)
	}
}

// leaseTable is a Locker's live root leases by owner token, what notices
// are matched against. A lease is in it from when it has something a
// notice must stop (renewals, or a context to cancel) until it ends: a
// lease nobody needs to stop costs the table nothing, and a leaked one is
// not kept alive by it. The zero leaseTable is ready to use.
type leaseTable struct {
	mu    sync.Mutex
	m     map[string]*Lease
	empty chan struct{} // closed when the last entry goes (Emptied); nil: none asked
}

// Add puts le in under token.
func (t *leaseTable) Add(token string, le *Lease) {
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[string]*Lease)
	}
	t.m[token] = le
	t.mu.Unlock()
}

// Remove takes token out if it is still le's.
func (t *leaseTable) Remove(token string, le *Lease) {
	t.mu.Lock()
	if t.m[token] == le {
		delete(t.m, token)
		if len(t.m) == 0 && t.empty != nil {
			close(t.empty)
			t.empty = nil
		}
	}
	t.mu.Unlock()
}

// Snapshot returns the leases now in the table.
func (t *leaseTable) Snapshot() []*Lease {
	t.mu.Lock()
	defer t.mu.Unlock()
	les := make([]*Lease, 0, len(t.m))
	for _, le := range t.m {
		les = append(les, le)
	}
	return les
}

// Emptied returns a channel that is closed once the table has no entry:
// at once if it has none now.
func (t *leaseTable) Emptied() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m) == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if t.empty == nil {
		t.empty = make(chan struct{})
	}
	return t.empty
}

// Get returns token's lease, if any.
func (t *leaseTable) Get(token string) (*Lease, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	le, ok := t.m[token]
	return le, ok
}
