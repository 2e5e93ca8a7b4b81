package locker

import (
	"context"
	"fmt"

	"github.com/locktag/locktag/locker/internal/admin"
	"github.com/locktag/locktag/locker/internal/protocol"
)

type actorKey struct{}

// WithActor returns a context that names who acts through it: the
// operator or service behind a ForceRelease, recorded in its audit log
// record (and its Observer's event). An ops page puts the authenticated user there.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorFromContext returns the actor WithActor put in ctx, or "".
func ActorFromContext(ctx context.Context) string {
	a, _ := ctx.Value(actorKey{}).(string)
	return a
}

// ForceRelease frees the lock named name (every kind of that name) whoever
// holds it, as its holder's release would: the lock goes to the next
// waiter with a larger fencing token, and the holder's lease context is
// cancelled at once (a control-channel notice; else at its next renewal)
// with a cause matching ErrLockLost and ErrForceReleased that names the
// reason. Every call is audited (log record, Observer). It returns
// ErrNotHeld when nothing was held, ErrEmptyKey, or an error matching
// ErrUnavailable (Redlock: a *QuorumError). reason is cut to 200 bytes.
// See docs/operations.md#force-release-a-stuck-lock.
func (l *Locker) ForceRelease(ctx context.Context, name, reason string) error {
	if name == "" {
		return ErrEmptyKey
	}
	reason = protocol.Reason(reason)
	actor := ActorFromContext(ctx)
	sctx, span := l.tel.startForce(ctx, name, reason, actor)
	all, err := admin.Force(sctx, l.admin(), &l.sh.Layout, l.kinds(), name, controlChannel(l.o.prefix), reason, l.o.callTimeout)
	err = quorumError(err)
	for _, f := range all {
		// The holder may be this Locker: end it here, notice or not.
		l.forced(f.Owner, reason)
	}
	l.tel.endForce(ctx, span, name, reason, actor, all, err)
	l.log.Force(ctx, name, reason, actor, all, err)
	switch {
	case err != nil:
		return err
	case len(all) == 0:
		return fmt.Errorf("locker: ForceRelease %q: %w", name, ErrNotHeld)
	}
	return nil
}
