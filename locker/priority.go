package locker

import "context"

type priorityKey struct{}

// withPriority marks ctx as carrying a call that keeps a held lock alive
// (a watchdog renewal, a release): see IsPriority.
func withPriority(ctx context.Context) context.Context {
	return context.WithValue(ctx, priorityKey{}, true)
}

// IsPriority reports whether a Driver call's context belongs to a renewal or
// a release of a held lock. A Driver should not let such a call starve when
// request traffic holds every pooled connection — a starved renewal would
// lose a lock that is perfectly healthy. The redigo driver serves it on a
// reserved connection when its pool is exhausted.
func IsPriority(ctx context.Context) bool {
	_, ok := ctx.Value(priorityKey{}).(bool)
	return ok
}
