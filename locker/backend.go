package locker

import (
	"time"

	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/callctx"
)

// terms are an Obtain call's Params after defaults.
type terms struct {
	ttl      time.Duration
	wait     time.Duration
	watchdog bool
	params   Params // as given, for telemetry
	// call is storage for the context of this Obtain's acquire calls
	// (the first try, a waiter's re-checks: one at a time); nil: each
	// call allocates its own.
	call *callctx.Deadline
	// closing is the Locker's: closed when it shuts down.
	closing <-chan struct{}
}

// terms are p after defaults: a zero TTL is a watchdog lease.
func (l *Locker) terms(p Params) terms {
	t := terms{ttl: p.TTL, wait: p.Wait, params: p, closing: l.closing}
	if t.ttl <= 0 {
		t.ttl, t.watchdog = l.o.lease, true
	}
	return t
}

// engineTerms are t for the backend; ref is handed back to the Waiting
// hook (the Obtain's lease, whose t it reads).
func (t terms) engineTerms(ref *Lease) backend.Terms {
	return backend.Terms{TTL: t.ttl, Wait: t.wait, Watchdog: t.watchdog, Call: t.call, Ref: ref, Closing: t.closing}
}
