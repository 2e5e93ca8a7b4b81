package locker

import (
	"context"
	"errors"
	"slices"

	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/preflight"
)

// ServerFacts are what one Redis master's (or replica's) INFO says about
// the settings a lock's guarantees depend on (see Locker.ServerFacts).
type ServerFacts struct {
	// Known is false where INFO is refused to the Locker's user (or the
	// server does not answer it, as an in-memory fake); the settings
	// below are then zero.
	Known bool
	// MaxMemory is the server's maxmemory in bytes; 0: none.
	MaxMemory int64
	// Policy is its maxmemory-policy. With a MaxMemory, any policy but
	// "noeviction" may evict a held lock's key (Check refuses it unless
	// WithEvictionAllowed).
	Policy string
	// EvictedKeys counts the keys the server evicted since it started
	// (INFO stats evicted_keys): under an evicting policy, each may have
	// been a held lock.
	EvictedKeys int64
	// AOF reports that appendonly is on. Off, a restart loses what was
	// written since the last snapshot (Check logs it once, and it is in
	// Risks).
	AOF bool
	// Replica reports a replica, which a failover may promote: its
	// settings matter from then on (Check refuses an evicting policy on
	// it as on a master).
	Replica bool
	// Addr is a replica's host:port, as its master or the Cluster names
	// it; "" for a master.
	Addr string
}

// Evicting reports whether the server may evict a held lock's key: a
// maxmemory with a policy other than noeviction.
func (f ServerFacts) Evicting() bool {
	return f.MaxMemory > 0 && f.Policy != "" && f.Policy != "noeviction"
}

// ServerFacts reads INFO on every master the Locker's locks live on (a
// Cluster's every master, every Redlock master), in a stable order, then
// on every replica its drivers list (driver.Replicas: go-redis' and
// rueidis' Sentinel and Cluster clients), by address, with one script
// call each; it writes nothing. A replica that does not answer is left
// out. lockotel's server metrics and the ops page show them. Errors:
// ErrUnavailable.
func (l *Locker) ServerFacts(ctx context.Context) ([]ServerFacts, error) {
	ctx, cancel := context.WithTimeout(ctx, l.o.callTimeout)
	defer cancel()
	nodes, _ := l.admin().Quorum()
	var out []ServerFacts
	var errs []error
	for _, nd := range nodes {
		fs, err := preflight.ReadFacts(ctx, nd)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range fs {
			out = append(out, ServerFacts(f))
		}
	}
	// Every master before any replica: a master's position stays put
	// while replicas come and go (lockotel names servers by it).
	slices.SortStableFunc(out, func(a, b ServerFacts) int {
		switch {
		case a.Replica == b.Replica:
			return 0
		case b.Replica:
			return -1
		}
		return 1
	})
	if err := errors.Join(errs...); err != nil {
		return out, lockerr.Unavailable(err)
	}
	return out, nil
}
