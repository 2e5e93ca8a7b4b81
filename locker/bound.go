package locker

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/locktag/locktag/locker/driver"
)

// bound wraps d so at most n calls are in flight at once (n <= 0: d as it
// is). Priority calls (renewals, releases) bypass the bound: a held lock's
// upkeep must not queue behind a burst of waiters.
func bound(d driver.Driver, n int) driver.Driver {
	if n <= 0 {
		return d
	}
	return &boundedDriver{Driver: d, slots: make(chan struct{}, n)}
}

type boundedDriver struct {
	driver.Driver
	slots chan struct{}
}

func (b *boundedDriver) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	if driver.IsPriority(ctx) {
		return b.Driver.Eval(ctx, s, keys, args...)
	}
	if err := b.take(ctx); err != nil {
		return nil, err
	}
	defer func() { <-b.slots }()
	return b.Driver.Eval(ctx, s, keys, args...)
}

// EvalAck is Eval's bound for a driver.Acker (WithReplicaAck: New checks
// that the driver is one).
func (b *boundedDriver) EvalAck(ctx context.Context, replicas int, timeout time.Duration, s *driver.Script, keys driver.Keys, args ...any) (any, int, error) {
	a := b.Driver.(driver.Acker)
	if driver.IsPriority(ctx) {
		return a.EvalAck(ctx, replicas, timeout, s, keys, args...)
	}
	if err := b.take(ctx); err != nil {
		return nil, 0, err
	}
	defer func() { <-b.slots }()
	return a.EvalAck(ctx, replicas, timeout, s, keys, args...)
}

// take takes a call slot, waiting when all are taken, but never past ctx's
// deadline (callCtx gives every call one) or cancellation.
func (b *boundedDriver) take(ctx context.Context) error {
	select {
	case b.slots <- struct{}{}:
		return nil
	default:
	}
	var expired <-chan time.Time
	if dl, ok := ctx.Deadline(); ok {
		t := time.NewTimer(time.Until(dl))
		defer t.Stop()
		expired = t.C
	}
	select {
	case b.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return notSent(fmt.Errorf("waiting for a call slot: %w", ctx.Err()))
	case <-expired:
		return notSent(fmt.Errorf("waiting for a call slot: %w", context.DeadlineExceeded))
	}
}

// Close forwards Locker.Close to the wrapped driver.
func (b *boundedDriver) Close() error { return closeDriver(b.Driver) }

// closeDriver closes d if it is an io.Closer (see driver.Driver).
func closeDriver(d driver.Driver) error {
	if c, ok := d.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
