package single

import (
	"context"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/protocol"
)

// Quorum returns the one node and a quorum of 1: a lock lives there, and
// that node alone makes its state.
func (b *Backend) Quorum() ([]*backend.Node, int) { return []*backend.Node{b.nd}, 1 }

// Handoff is the grant mode: a force-release hands the lock to the
// queue's head.
func (b *Backend) Handoff() (string, any) { return protocol.HandoffGrant, b.WindowArg }

// Masters returns the deployment's masters, when the driver exposes them
// (driver.Masters), else the one node.
func (b *Backend) Masters(ctx context.Context) ([]driver.Driver, error) {
	ms, err := b.nd.Masters(ctx)
	if err != nil {
		return nil, lockerr.Unavailable(err)
	}
	return ms, nil
}
