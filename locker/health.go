package locker

import (
	"context"
)

// Healthy reports whether the Locker can obtain locks now, for readiness
// probes: nil when the deployment answers (New), or a majority of masters
// does (NewRedlock); otherwise an error matching ErrUnavailable naming the
// masters down. It costs one trivial script per node; until Check passed
// on a node it runs Check there (ErrUnsupported). Ping is the stricter
// start-up check. stdhttp.Health and interceptor.NewHealthServer are
// probes on it. See docs/operations.md#health-checks.
func (l *Locker) Healthy(ctx context.Context) error { return l.be.Healthy(ctx) }
