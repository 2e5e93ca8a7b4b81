package locker

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/locktag/locktag/locker/internal/scripts"
	"github.com/locktag/locktag/locker/internal/tally"
)

// The operator calls on a Redlock Locker: each fans out to every master
// and merges or tallies the answers. Redlock keeps mutexes only.

// force frees name's lock on every master (waiters are sent the free
// notice, as on a release). The holders are freed when a majority of
// masters held the lock; remnants on a minority are freed too, but the
// lock was not held by Redlock's rule, and the error matches ErrNotHeld.
func (b *quorum) force(ctx context.Context, l *Locker, name, reason string) ([]freed, error) {
	n, _ := l.holder(name)
	res := b.fanout(ctx, b.o.callTimeout, scripts.Force, n.keys, controlChannel(b.o.prefix), reason, scripts.HandoffNotify, 0)
	var all []freed
	t := tally.Count("force-release", b.need, res, func(_ int, v any) (bool, error) {
		got, _, err := parseForced(KindMutex, v)
		if err != nil {
			return false, err
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
		return all, t.Err()
	case len(all) > 0:
		return all, fmt.Errorf("locker: ForceRelease %q: held on %d of %d masters, fewer than a majority: %w", name, t.Yes, len(res), ErrNotHeld)
	}
	return nil, nil
}

// inspect reads name's state on every master and merges the views.
func (b *quorum) inspect(ctx context.Context, l *Locker, name string) (*State, error) {
	res := b.fanout(ctx, b.o.callTimeout, scripts.Inspect, l.inspectKeys(name), maxInspectWaiters)
	var views []*State
	t := tally.Count("inspect", b.need, res, func(_ int, v any) (bool, error) {
		st, err := parseState(name, v)
		if err != nil {
			return false, err
		}
		views = append(views, st)
		return true, nil
	})
	if !t.Won() {
		return nil, t.Err()
	}
	return mergeViews(name, views, b.need), nil
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
