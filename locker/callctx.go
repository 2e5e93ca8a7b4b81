package locker

import (
	"context"
	"time"

	"github.com/locktag/locktag/locker/driver"
)

// callCtx bounds one Redis call by the call timeout. The drivers turn a
// context's deadline into socket timeouts, so a deadline is all a call needs:
// callCtx adds one without the timer (and allocations) of
// context.WithTimeout.
func (o *options) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	dl := time.Now().Add(o.callTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		return ctx, func() {}
	}
	return &deadlineCtx{Context: ctx, dl: dl}, func() {}
}

// callCtxIn is callCtx with the context made in dc (nil: allocated), for a
// caller that makes one call at a time with it and then drops it.
func (o *options) callCtxIn(ctx context.Context, dc *deadlineCtx) context.Context {
	dl := time.Now().Add(o.callTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		return ctx
	}
	if dc == nil {
		dc = new(deadlineCtx)
	}
	*dc = deadlineCtx{Context: ctx, dl: dl}
	return dc
}

// cleanupCtx is the context of a clean-up call that must happen even when
// ctx ended (a waiter leaving the queue, an undone acquisition): ctx's
// values without its cancellation, bounded by the call timeout.
func (o *options) cleanupCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), o.callTimeout)
}

// upkeepCtx is the context of a call that keeps a held lease alive or ends
// it (a release, a claim's Complete): a clean-up call with priority, so a
// driver serves it even when request traffic holds every connection.
// It is one allocation where WithoutCancel, WithPriority and WithTimeout
// made five (a timer among them): the drivers need the deadline, not a
// Done channel that closes at it.
func (o *options) upkeepCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return &upkeepContext{values: ctx, dl: time.Now().Add(o.callTimeout)}, func() {}
}

// upkeepCtxIn is upkeepCtx made in c, for a call made once with it (a
// lease's release); nothing needs cancelling.
func (o *options) upkeepCtxIn(ctx context.Context, c *upkeepContext) context.Context {
	*c = upkeepContext{values: ctx, dl: time.Now().Add(o.callTimeout)}
	return c
}

// prioritized answers the priority mark's Value lookup (see upkeepContext).
var prioritized = driver.WithPriority(context.Background())

// upkeepContext carries values's values and the driver priority mark, is
// never cancelled, and has deadline dl: Done is nil, Err reports the
// deadline once it passed.
type upkeepContext struct {
	values context.Context
	dl     time.Time
}

func (c *upkeepContext) Deadline() (time.Time, bool) { return c.dl, true }
func (c *upkeepContext) Done() <-chan struct{}       { return nil }

func (c *upkeepContext) Err() error {
	if !time.Now().Before(c.dl) {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *upkeepContext) Value(key any) any {
	if v := prioritized.Value(key); v != nil {
		return v
	}
	return c.values.Value(key)
}

// deadlineCtx is its parent with an earlier deadline but no timer of its
// own: Done is the parent's, and Err reports the deadline once it passed.
type deadlineCtx struct {
	context.Context
	dl time.Time
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.dl, true }

func (c *deadlineCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.dl) {
		return context.DeadlineExceeded
	}
	return nil
}
