package locker

import (
	"context"
	"errors"
	"fmt"

	"github.com/locktag/locktag/locker/internal/lockerr"
)

// Healthy reports whether the Locker can obtain locks now, for health
// checks: nil when the Redis deployment answers (New), or when a majority
// of the masters answer (NewRedlock, which obtains locks with a majority
// and so stays usable with a minority down). Otherwise it returns an error
// matching ErrUnavailable that names the masters that did not answer.
//
// Ping is the stricter start-up check (every master must answer);
// Healthy is what a readiness probe should follow. Each call is one
// trivial script per node, bounded by ctx and WithCallTimeout; until
// Check has passed on a node, Healthy runs Check there instead, so a
// server that answers but cannot serve the locker (an ACL that denies
// scripting, say) is not ready either: ErrUnsupported.
// stdhttp.Health and interceptor.NewHealthServer are ready-made probes on
// it.
func (l *Locker) Healthy(ctx context.Context) error { return l.be.healthy(ctx) }

// healthy: one deployment is usable exactly when it answers.
func (b *single) healthy(ctx context.Context) error { return b.ping(ctx) }

// healthy pings every master in parallel and needs a majority.
func (b *quorum) healthy(ctx context.Context) error {
	errs := b.everyMaster(ctx, (*node).ping)
	down := 0
	for _, err := range errs {
		if err != nil {
			down++
		}
	}
	if len(b.nodes)-down >= b.need {
		return nil
	}
	return lockerr.Unavailable(fmt.Errorf("%d of %d masters answer, %d needed: %w",
		len(b.nodes)-down, len(b.nodes), b.need, errors.Join(errs...)))
}
