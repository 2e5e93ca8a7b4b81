package quorum

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/preflight"
	"github.com/locktag/locktag/locker/internal/protocol"
)

// Rates refuses: a bucket on each master apart admits up to N times the
// rate, and a quorum of buckets cannot be exact.
func (b *Backend) Rates() (*backend.Node, error) {
	return nil, fmt.Errorf("%w: Redlock keeps no rate limits: a bucket on each master apart admits up to %d times the rate, "+
		"and no quorum of buckets makes a limit exact; use a Locker from New", lockerr.ErrKindUnsupported, len(b.nodes))
}

// Check runs Locker.Check on every master at once.
func (b *Backend) Check(ctx context.Context) error {
	return preflight.Failed(errors.Join(b.everyMaster(ctx, preflight.Check)...))
}

// Healthy pings every master in parallel and needs a majority.
func (b *Backend) Healthy(ctx context.Context) error {
	errs := b.everyMaster(ctx, preflight.Ping)
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

// everyMaster runs op on every master at once, under one call timeout, and
// returns each master's error (nil where it succeeded), named by index.
func (b *Backend) everyMaster(ctx context.Context, op func(context.Context, *backend.Node) error) []error {
	cctx, cancel := b.Cfg.Bounds.Call(ctx)
	defer cancel()
	errs := make([]error, len(b.nodes))
	var wg sync.WaitGroup
	for i, nd := range b.nodes {
		wg.Go(func() {
			if err := op(cctx, nd); err != nil {
				errs[i] = fmt.Errorf("master %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	return errs
}

// Quorum returns every master and the majority: a Redlock lock's state is
// what a majority of masters agree on.
func (b *Backend) Quorum() ([]*backend.Node, int) { return b.nodes, b.need }

// Handoff is the free-notice mode: masters keep no hand-over; waiters are
// sent a free notice.
func (b *Backend) Handoff() (string, any) { return protocol.HandoffNotify, 0 }

// Masters returns every Redlock master, in the order given to NewRedlock.
func (b *Backend) Masters(context.Context) ([]driver.Driver, error) {
	ds := make([]driver.Driver, len(b.nodes))
	for i, nd := range b.nodes {
		ds[i] = nd.Drv
	}
	return ds, nil
}
