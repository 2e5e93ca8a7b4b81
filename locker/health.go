package locker

import (
	"context"
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
func (l *Locker) Healthy(ctx context.Context) error { return l.be.Healthy(ctx) }
