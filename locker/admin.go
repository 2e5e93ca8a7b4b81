package locker

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/names"
	"github.com/locktag/locktag/locker/internal/node"
	"github.com/locktag/locktag/locker/internal/scripts"
	"github.com/locktag/locktag/locker/internal/tally"
)

// The operator calls, written once over the backend's node.Admin: each
// runs its script on every node a lock lives on (one deployment's node,
// or every Redlock master) and tallies the answers with the backend's
// quorum (1, or the majority). One deployment's answer is its own state;
// Redlock's views are merged.

// force frees name's locks of every kind the backend keeps, one script
// per kind, and returns the holders freed. On Redlock the holders are
// freed when a majority of masters held the lock; remnants on a minority
// are freed too, but the lock was not held by Redlock's rule, and the
// error matches ErrNotHeld.
func (l *Locker) force(ctx context.Context, name, reason string) ([]freed, error) {
	kinds := []string{KindMutex}
	if l.be.Semaphores() == nil {
		kinds = append(kinds, KindSemaphore, KindRW)
	}
	var all []freed
	for _, kind := range kinds {
		got, err := l.forceKind(ctx, name, kind, reason)
		all = append(all, got...)
		if err != nil {
			return all, err
		}
	}
	return all, nil
}

// forceKind runs the force-release script of kind for name on every node.
func (l *Locker) forceKind(ctx context.Context, name, kind, reason string) ([]freed, error) {
	ad := l.admin()
	nodes, need := ad.Quorum()
	var n names.Names
	var sc *driver.Script
	switch kind {
	case KindMutex:
		n, _ = l.holder(name)
		sc = scripts.Force
	case KindSemaphore:
		n, _ = l.kindHolder(name, ":s", scripts.Sem, nil)
		sc = scripts.SemForce
	default:
		n, _ = l.kindHolder(name, ":rw", scripts.RW, nil)
		sc = scripts.RWForce
	}
	mode, window := ad.Handoff()
	res := node.Fanout(ctx, nodes, l.o.callTimeout, sc, n.Keys, controlChannel(l.o.prefix), reason, mode, window)
	var all []freed
	t := tally.Count("force-release", need, res, func(i int, v any) (bool, error) {
		got, g, err := parseForced(kind, v)
		if err != nil {
			return false, err
		}
		if g.token != "" {
			// Handed to a waiter: wake it here if it is ours.
			nodes[i].Hub.HandOver(g.token, g.grant)
		}
		for _, f := range got {
			i := slices.IndexFunc(all, func(a freed) bool { return a.Owner == f.Owner })
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
		return all, adminErr(t)
	case len(all) > 0:
		return all, fmt.Errorf("locker: ForceRelease %q: held on %d of %d masters, fewer than a majority: %w", name, t.Yes, len(res), ErrNotHeld)
	}
	return nil, nil
}

// inspect reads name's state on every node: one deployment's view, or the
// Redlock masters' views merged.
func (l *Locker) inspect(ctx context.Context, name string) (*State, error) {
	nodes, need := l.admin().Quorum()
	res := node.Fanout(ctx, nodes, l.o.callTimeout, scripts.Inspect, l.inspectKeys(name), maxInspectWaiters)
	var views []*State
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
		return nil, adminErr(t)
	case len(nodes) == 1:
		return views[0], nil
	}
	return mergeViews(name, views, need), nil
}

// adminErr is a failed operator call's error: one deployment's failure
// (ErrUnavailable), or Redlock's *QuorumError.
func adminErr(t tally.Tally) error {
	if len(t.Errs) == 1 {
		return lockerr.Unavailable(t.Errs[0])
	}
	return t.Err()
}

// mergeViews merges the masters' views of one Redlock lock: the holder a
// majority (need) agree on, with the largest fence, hold count and time
// held and the shortest lease left any reports; the waiters queued on a
// majority, earliest first, with the longest wait and the shortest wait
// left any reports. Kind is KindMutex when the merged view has either,
// else "": what a minority of masters keeps is not a Redlock lock.
func mergeViews(name string, views []*State, need int) *State {
	st := &State{Name: name}
	type tally[T any] struct {
		v T
		n int
	}
	var holders []tally[Holder]
	var waiters []tally[Waiter]
	cut := false
	for _, v := range views {
		cut = cut || v.Queued > len(v.Waiters)
		if h := v.Holder; h != nil {
			i := slices.IndexFunc(holders, func(t tally[Holder]) bool { return t.v.Owner == h.Owner })
			if i < 0 {
				holders = append(holders, tally[Holder]{*h, 1})
			} else {
				m := &holders[i]
				m.n++
				m.v.Fence, m.v.Holds, m.v.Held = max(m.v.Fence, h.Fence), max(m.v.Holds, h.Holds), max(m.v.Held, h.Held)
				m.v.LeaseLeft = min(m.v.LeaseLeft, h.LeaseLeft)
				m.v.Label = cmp.Or(m.v.Label, h.Label)
			}
		}
		for _, w := range v.Waiters {
			i := slices.IndexFunc(waiters, func(t tally[Waiter]) bool { return t.v.Owner == w.Owner })
			if i < 0 {
				waiters = append(waiters, tally[Waiter]{w, 1})
			} else {
				m := &waiters[i]
				m.n++
				m.v.Waited, m.v.WaitLeft = max(m.v.Waited, w.Waited), min(m.v.WaitLeft, w.WaitLeft)
				m.v.Label = cmp.Or(m.v.Label, w.Label)
			}
		}
	}
	for _, h := range holders {
		if h.n >= need {
			st.Holders = []Holder{h.v}
			st.Holder = &st.Holders[0]
		}
	}
	for _, w := range waiters {
		if w.n >= need {
			st.Waiters = append(st.Waiters, w.v)
		}
	}
	slices.SortStableFunc(st.Waiters, func(a, b Waiter) int { return cmp.Compare(b.Waited, a.Waited) })
	st.Queued = len(st.Waiters)
	if cut {
		for _, v := range views {
			st.Queued = max(st.Queued, v.Queued)
		}
	}
	if st.Holder != nil || len(st.Waiters) > 0 {
		st.Kind = KindMutex
	}
	return st
}
