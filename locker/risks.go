package locker

import (
	"slices"
	"sync"
)

// riskSet holds what Check found on the server that may break a lock's
// guarantees but did not refuse: an eviction policy accepted by
// WithEvictionAllowed, a policy INFO would not show. The zero value is
// empty.
type riskSet struct {
	mu   sync.Mutex
	seen []string
}

// add records what and reports whether it is new.
func (s *riskSet) add(what string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(s.seen, what) {
		return false
	}
	s.seen = append(s.seen, what)
	return true
}

// riskVolatileFence is the risk a fencing token from a server without an
// append-only file carries (Lease.Token logs it once).
const riskVolatileFence = "persistence: appendonly is off on a master and this Locker hands out fencing tokens: " +
	"a restart of Redis (or a failover to a replica that had not caught up) loses the held locks, " +
	"so a lock is granted again while its holder still runs (only storage that checks the tokens refuses the older holder), " +
	"and loses the idempotency records and rate state written since the last snapshot; " +
	"set appendonly yes with appendfsync everysec or always (see docs/production.md)"

// risk is the engine's report of a risk Check accepted: logged once per
// Locker, at Warn.
func (l *Locker) risk(what string) {
	if l.risks.add(what) {
		l.log.Risk(what)
	}
}

// Risks returns what Check found on the server that may break a lock's
// guarantees and did not refuse, in the order found: a maxmemory-policy
// that may evict a held lock, accepted by WithEvictionAllowed; a policy
// Check could not read because INFO is refused to the user; fencing
// tokens handed out (Lease.Token) while a master runs without an
// append-only file. Each was
// logged once at Warn when found. Empty until Check (or the first Ping or
// Healthy) ran; the ops page shows the list.
func (l *Locker) Risks() []string {
	l.risks.mu.Lock()
	defer l.risks.mu.Unlock()
	return slices.Clone(l.risks.seen)
}
