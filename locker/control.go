package locker

import (
	"strings"
	"sync"

	"github.com/locktag/locktag/locker/internal/keeper"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/node"
)

// The control channel tells a Locker that one of its leases was
// force-released, so the holder's context is cancelled at once rather
// than at its next renewal. Every Locker on one deployment subscribes to
// the same channel, prefix + "ctl", on its hub's listener: lazily, when its
// first lease is made, so a Locker that never holds a lock opens no
// subscriber connection and no call of the hot path pays a round trip for
// it. The lock value does not record which Locker holds it, and need not:
// a force-release publishes "token[,token...] reason" to all, and each
// Locker looks the tokens up among its own leases. Force-releases are
// rare operator actions, so the fan-out costs nothing worth a write per
// acquire.
//
// A notice missed (the listener broke, or the lease was made in the
// instant before it was registered) costs the holder the prompt
// cancellation only: its next renewal is refused and loses the lease as
// before.

// controlChannel is the control channel's name for prefix.
func controlChannel(prefix string) string { return prefix + "ctl" }

// leaseTable is a Locker's live root leases by owner token: what a
// force-release notice is matched against. A lease is in it from when it
// has something a notice must stop — renewals, or a context to cancel —
// until it ends: a fixed lease whose context nobody asked for costs the
// table nothing (and a leaked one is not kept alive by it).
type leaseTable struct {
	mu sync.Mutex
	m  map[string]*Lease
}

func (t *leaseTable) add(le *Lease) {
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[string]*Lease)
	}
	t.m[le.token] = le
	t.mu.Unlock()
}

func (t *leaseTable) remove(le *Lease) {
	t.mu.Lock()
	if t.m[le.token] == le {
		delete(t.m, le.token)
	}
	t.mu.Unlock()
}

func (t *leaseTable) get(token string) *Lease {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[token]
}

// control makes nd's hub carry force-release notices to l.
func (l *Locker) control(nd *node.Node) {
	nd.Hub.SetControl(controlChannel(l.o.prefix), l.controlled)
	l.ctl = append(l.ctl, nd.Hub)
}

// track registers a new root lease for force-release notices and makes
// sure the control channel is subscribed.
func (l *Locker) track(le *Lease) {
	if le.token == "" {
		return // a multi-key root: its parts are tracked
	}
	l.leases.add(le)
	l.watchControl()
}

// untrack forgets an ended root lease.
func (l *Locker) untrack(le *Lease) { l.leases.remove(le) }

// watchControl makes sure every hub's control channel is subscribed.
func (l *Locker) watchControl() {
	for _, h := range l.ctl {
		h.WatchControl()
	}
}

// controlled handles a control message: "token[,token...] reason". It
// runs on the listener's goroutine.
func (l *Locker) controlled(payload string) {
	tokens, reason, ok := strings.Cut(payload, " ")
	if !ok {
		return
	}
	for tok := range strings.SplitSeq(tokens, ",") {
		l.forced(tok, reason)
	}
}

// forced ends the local lease with owner token, if any, as force-released
// for reason.
func (l *Locker) forced(token, reason string) {
	if le := l.leases.get(token); le != nil {
		cause := &lockerr.Forced{Reason: reason}
		le.finish(cause, keeper.Forced, cause)
	}
}
