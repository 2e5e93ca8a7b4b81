package locker

import (
	"context"
	"errors"

	"github.com/locktag/locktag/locker/internal/lockerr"
)

// ServerFacts are what one Redis master's INFO says about the settings a
// lock's guarantees depend on (see Locker.ServerFacts).
type ServerFacts struct {
	// Known is false where INFO is refused to the Locker's user (or the
	// server does not answer it, as an in-memory fake); the rest is then
	// zero.
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
}

// Evicting reports whether the server may evict a held lock's key: a
// maxmemory with a policy other than noeviction.
func (f ServerFacts) Evicting() bool {
	return f.MaxMemory > 0 && f.Policy != "" && f.Policy != "noeviction"
}

// ServerFacts reads INFO on every master the Locker's locks live on (a
// Cluster's every master, every Redlock master), in a stable order, with
// one script call each; it writes nothing. lockotel's server metrics and
// the ops page show them. Errors: ErrUnavailable.
func (l *Locker) ServerFacts(ctx context.Context) ([]ServerFacts, error) {
	ctx, cancel := context.WithTimeout(ctx, l.o.callTimeout)
	defer cancel()
	nodes, _ := l.admin().Quorum()
	var out []ServerFacts
	var errs []error
	for _, nd := range nodes {
		fs, err := nd.Facts(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range fs {
			out = append(out, ServerFacts(f))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return out, lockerr.Unavailable(err)
	}
	return out, nil
}
