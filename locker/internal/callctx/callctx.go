// Package callctx bounds every Redis call the locker makes: a deadline
// without a timer for a call (Call), a clean-up that outlives its caller's
// cancellation (Cleanup), a priority upkeep call (Upkeep), and a cap on
// the calls in flight per node that also tries a call again while a
// Cluster moves its slot (Limit). Contexts a hot path reuses are
// values a caller can embed (Deadline, UpkeepContext), so a lock+unlock
// allocates none.
package callctx

import (
	"context"
	"time"

	"github.com/locktag/locktag/locker/driver"
)

// Bounds are the call timeout every bounded call gets.
type Bounds struct {
	Timeout time.Duration
}

// Call bounds one Redis call by the call timeout. The drivers turn a
// context's deadline into socket timeouts, so a deadline is all a call needs:
// callCtx adds one without the timer (and allocations) of
// context.WithTimeout.
func (o Bounds) Call(ctx context.Context) (context.Context, context.CancelFunc) {
	dl := time.Now().Add(o.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		return ctx, func() {}
	}
	return &Deadline{Context: ctx, dl: dl}, func() {}
}

// CallIn is Call with the context made in dc (nil: allocated), for a
// caller that makes one call at a time with it and then drops it.
func (o Bounds) CallIn(ctx context.Context, dc *Deadline) context.Context {
	dl := time.Now().Add(o.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		return ctx
	}
	if dc == nil {
		dc = new(Deadline)
	}
	*dc = Deadline{Context: ctx, dl: dl}
	return dc
}

// Cleanup is the context of a clean-up call that must happen even when
// ctx ended (a waiter leaving the queue, an undone acquisition): ctx's
// values without its cancellation, bounded by the call timeout.
func (o Bounds) Cleanup(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), o.Timeout)
}

// Upkeep is the context of a call that keeps a held lease alive or ends
// it (a release, a claim's Complete): a clean-up call with priority, so a
// driver serves it even when request traffic holds every connection.
// It is one value where WithoutCancel, WithPriority and WithTimeout made
// several (a timer among them): the drivers need the deadline, not a Done
// channel that closes at it.
func (o Bounds) Upkeep(ctx context.Context) (context.Context, context.CancelFunc) {
	return &UpkeepContext{values: ctx, dl: time.Now().Add(o.Timeout)}, func() {}
}

// UpkeepIn is Upkeep made in c, for a call made once with it (a
// lease's release); nothing needs cancelling.
func (o Bounds) UpkeepIn(ctx context.Context, c *UpkeepContext) context.Context {
	*c = UpkeepContext{values: ctx, dl: time.Now().Add(o.Timeout)}
	return c
}

// prioritized answers the priority mark's Value lookup (see UpkeepContext).
var prioritized = driver.WithPriority(context.Background())

// UpkeepContext carries values's values and the driver priority mark, is
// never cancelled, and has deadline dl: Done is nil, Err reports the
// deadline once it passed.
type UpkeepContext struct {
	values context.Context
	dl     time.Time
}

func (c *UpkeepContext) Deadline() (time.Time, bool) { return c.dl, true }
func (c *UpkeepContext) Done() <-chan struct{}       { return nil }

func (c *UpkeepContext) Err() error {
	if !time.Now().Before(c.dl) {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *UpkeepContext) Value(key any) any {
	if v := prioritized.Value(key); v != nil {
		return v
	}
	return c.values.Value(key)
}

// Deadline is its parent with an earlier deadline but no timer of its
// own: Done is the parent's, and Err reports the deadline once it passed.
type Deadline struct {
	context.Context
	dl time.Time
}

func (c *Deadline) Deadline() (time.Time, bool) { return c.dl, true }

func (c *Deadline) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.dl) {
		return context.DeadlineExceeded
	}
	return nil
}
