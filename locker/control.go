package locker

import (
	"github.com/locktag/locktag/locker/internal/control"
	"github.com/locktag/locktag/locker/internal/keeper"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/node"
)

// control makes nd's hub carry force-release notices to l (package
// internal/control).
func (l *Locker) control(nd *node.Node) {
	nd.Hub.SetControl(control.Channel(l.o.prefix), func(notice string) { control.Each(notice, l.forced) })
	l.ctl = append(l.ctl, nd.Hub)
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
