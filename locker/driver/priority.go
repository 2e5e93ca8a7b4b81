package driver

import "context"

type priorityKey struct{}

// WithPriority marks ctx as carrying a call that keeps a held lease alive:
// a renewal or a release of a lock, a renewal or an end of an idempotency
// claim. See IsPriority.
func WithPriority(ctx context.Context) context.Context {
	return context.WithValue(ctx, priorityKey{}, true)
}

// IsPriority reports whether a Driver call's context was marked by
// WithPriority. A Driver should not let such a call starve when request
// traffic holds every pooled connection — a starved renewal would lose a
// lease that is perfectly healthy. The redigo driver with pooled calls
// serves it on a reserved connection when its pool is exhausted (its
// default pipelined connections take no pooled connection at all).
func IsPriority(ctx context.Context) bool {
	_, ok := ctx.Value(priorityKey{}).(bool)
	return ok
}
