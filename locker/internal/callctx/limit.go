package callctx

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/lockerr"
)

// Limit wraps d so at most n calls are in flight at once (n <= 0: no
// bound), and so every call is tried again while a Cluster moves its slot
// (see moving.go). Priority calls (renewals, releases) bypass the bound: a
// held lock's upkeep must not queue behind a burst of waiters.
func Limit(d driver.Driver, n int) driver.Driver {
	b := &Limited{Driver: d}
	if n > 0 {
		b.slots = make(chan struct{}, n)
	}
	return b
}

// Limited is a driver with at most n calls in flight (see Limit); Driver
// is the driver it wraps.
type Limited struct {
	driver.Driver
	slots chan struct{} // nil: no bound
}

// Eval runs s once a call slot is free (priority calls at once), and again
// while a Cluster answers that its slot is moving (see moving.go).
func (b *Limited) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	if !driver.IsPriority(ctx) && b.slots != nil {
		if err := b.take(ctx); err != nil {
			return nil, err
		}
		defer func() { <-b.slots }()
	}
	v, err := b.Driver.Eval(ctx, s, keys, args...)
	if slotMoving(err) {
		v, err = whileMoving(ctx, v, err, func() (any, error) { return b.Driver.Eval(ctx, s, keys, args...) })
	}
	return v, err
}

// EvalAck is Eval's bound for a driver.Acker (WithReplicaAck: New checks
// that the driver is one).
func (b *Limited) EvalAck(ctx context.Context, replicas int, timeout time.Duration, s *driver.Script, keys driver.Keys, args ...any) (any, int, error) {
	a := b.Driver.(driver.Acker)
	if !driver.IsPriority(ctx) && b.slots != nil {
		if err := b.take(ctx); err != nil {
			return nil, 0, err
		}
		defer func() { <-b.slots }()
	}
	v, n, err := a.EvalAck(ctx, replicas, timeout, s, keys, args...)
	if slotMoving(err) {
		type acked struct {
			v any
			n int
		}
		var r acked
		r, err = whileMoving(ctx, acked{v, n}, err, func() (acked, error) {
			v, n, err := a.EvalAck(ctx, replicas, timeout, s, keys, args...)
			return acked{v, n}, err
		})
		v, n = r.v, r.n
	}
	return v, n, err
}

// take takes a call slot, waiting when all are taken, but never past ctx's
// deadline (callCtx gives every call one) or cancellation.
func (b *Limited) take(ctx context.Context) error {
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
		return lockerr.NotSent(fmt.Errorf("waiting for a call slot: %w", ctx.Err()))
	case <-expired:
		return lockerr.NotSent(fmt.Errorf("waiting for a call slot: %w", context.DeadlineExceeded))
	}
}

// Close forwards Locker.Close to the wrapped driver.
func (b *Limited) Close() error { return CloseDriver(b.Driver) }

// CloseDriver closes d if it is an io.Closer (see driver.Driver).
func CloseDriver(d driver.Driver) error {
	if c, ok := d.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
