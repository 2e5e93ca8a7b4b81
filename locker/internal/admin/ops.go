package admin

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/protocol"
	"github.com/locktag/locktag/locker/internal/tally"
)

// Inspect reads name's state on every node: one deployment's view, or the
// Redlock masters' views merged.
func Inspect(ctx context.Context, ad backend.Admin, lay *protocol.KeyLayout, name string, timeout time.Duration) (*View, error) {
	nodes, need := ad.Quorum()
	var a protocol.Args
	a[protocol.ArgMax] = maxWaiters
	res := backend.Fanout(ctx, nodes, timeout, protocol.Inspect, inspectKeys(lay, name), &a)
	var views []*View
	t := tally.Count("inspect", need, res, func(_ int, v any) (bool, error) {
		st, err := parseState(name, v)
		if err != nil {
			return false, err
		}
		views = append(views, st)
		return true, nil
	})
	switch {
	case !t.Won():
		return nil, failed(t)
	case len(nodes) == 1:
		return views[0], nil
	}
	return mergeViews(name, views, need), nil
}

// inspectKeys are inspect.lua's keys for name: each kind's lock, queue
// and details.
func inspectKeys(lay *protocol.KeyLayout, name string) driver.Keys {
	m, _ := lay.Mutex(name, nil)
	sem, _ := lay.Kind(name, ":s", protocol.Sem, 0, nil, nil)
	rw, _ := lay.Kind(name, ":rw", protocol.RW, 0, nil, nil)
	mk, sk, rk := m.Keys.Names(), sem.Keys.Names(), rw.Keys.Names()
	return driver.NewKeys(mk[0], mk[1], mk[2], sk[0], sk[1], sk[2], rk[0], rk[1], rk[2])
}

// Force frees name's locks of each of kinds (those the backend keeps),
// one script per kind, publishing the owners freed on channel, and returns the holders freed. On Redlock the holders are
// freed when a majority of masters held the lock; remnants on a minority
// are freed too, but the lock was not held by Redlock's rule, and the
// error matches ErrNotHeld.
func Force(ctx context.Context, ad backend.Admin, lay *protocol.KeyLayout, kinds []string, name, channel, reason string, timeout time.Duration) ([]Freed, error) {
	var all []Freed
	for _, kind := range kinds {
		got, err := forceKind(ctx, ad, lay, name, kind, channel, reason, timeout)
		all = append(all, got...)
		if err != nil {
			return all, err
		}
	}
	return all, nil
}

// forceKind runs the force-release script of kind for name on every node.
func forceKind(ctx context.Context, ad backend.Admin, lay *protocol.KeyLayout, name, kind, channel, reason string, timeout time.Duration) ([]Freed, error) {
	nodes, need := ad.Quorum()
	var n protocol.Names
	var sc *protocol.Call
	switch kind {
	case kindMutex:
		n, _ = lay.Mutex(name, nil)
		sc = protocol.Force
	case kindSemaphore:
		n, _ = lay.Kind(name, ":s", protocol.Sem, 0, nil, nil)
		sc = protocol.SemForce
	default:
		n, _ = lay.Kind(name, ":rw", protocol.RW, 0, nil, nil)
		sc = protocol.RWForce
	}
	var a protocol.Args
	a[protocol.ArgChannel] = channel
	a[protocol.ArgReason] = reason
	a[protocol.ArgHandoff], a[protocol.ArgWindowMS] = ad.Handoff()
	res := backend.Fanout(ctx, nodes, timeout, sc, n.Keys, &a)
	var all []Freed
	t := tally.Count("force-release", need, res, func(i int, v any) (bool, error) {
		got, g, err := parseForced(kind, v)
		if err != nil {
			return false, err
		}
		if g.token != "" {
			// Handed to a waiter: wake it here if it is ours.
			nodes[i].Hub.HandOver(n.Channel, g.token, g.grant)
		}
		for _, f := range got {
			i := slices.IndexFunc(all, func(a Freed) bool { return a.Owner == f.Owner })
			if i < 0 {
				all = append(all, f)
				continue
			}
			all[i].Fence = max(all[i].Fence, f.Fence)
			all[i].Holds = max(all[i].Holds, f.Holds)
		}
		return len(got) > 0, nil
	})
	switch {
	case t.Won():
		return all, nil
	case t.Broken():
		return all, failed(t)
	case len(all) > 0:
		return all, fmt.Errorf("locker: ForceRelease %q: held on %d of %d masters, fewer than a majority: %w", name, t.Yes, len(res), lockerr.ErrNotHeld)
	}
	return nil, nil
}

// failed is a failed operator call's error: one deployment's failure
// (ErrUnavailable), or Redlock's *tally.Error (locker's *QuorumError).
func failed(t tally.Tally) error {
	if len(t.Errs) == 1 {
		return lockerr.Unavailable(t.Errs[0])
	}
	return t.Err()
}
