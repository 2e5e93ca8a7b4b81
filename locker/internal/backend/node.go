package backend

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/internal/hub"
)

// Node is one Redis deployment (or Redlock master) with its shared
// subscriber connection.
type Node struct {
	Drv driver.Driver // bounded by Config.MaxCalls
	Hub *hub.Hub
	Sh  *Shared
	// Capable is set once the start-up check (preflight.Check) passed on
	// the node; until then preflight.Ping runs the check, after it a
	// trivial script.
	Capable atomic.Bool
}

// New returns the node reached through d, its calls bounded by
// sh.Cfg.MaxCalls.
func New(d driver.Driver, sh *Shared) *Node {
	d = callctx.Limit(d, sh.Cfg.MaxCalls)
	return &Node{Drv: d, Hub: hub.New(d, hub.Config{Bounds: sh.Cfg.Bounds, Linger: sh.Cfg.Linger, SID: sh.SID}), Sh: sh}
}

// Masters are the node's masters when its driver exposes them
// (driver.Masters: a Cluster), else the node itself.
func (nd *Node) Masters(ctx context.Context) ([]driver.Driver, error) {
	d := nd.Drv
	if bd, ok := d.(*callctx.Limited); ok {
		d = bd.Driver // WithMaxConcurrentCalls's wrapper hides the driver's Masters
	}
	if m, ok := d.(driver.Masters); ok {
		return m.Masters(ctx)
	}
	return []driver.Driver{nd.Drv}, nil
}

// Close closes the node's subscriber connection and its driver.
func (nd *Node) Close() error {
	return errors.Join(nd.Hub.Close(), callctx.CloseDriver(nd.Drv))
}
