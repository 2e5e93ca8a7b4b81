package admin

import (
	"cmp"
	"slices"
)

// mergeViews merges the masters' views of one Redlock lock: the holder a
// majority (need) agree on, with the largest fence, hold count and time
// held and the shortest lease left any reports; the waiters queued on a
// majority, earliest first, with the longest wait and the shortest wait
// left any reports. Kind is kindMutex when the merged view has either,
// else "": what a minority of masters keeps is not a Redlock lock.
func mergeViews(name string, views []*View, need int) *View {
	st := &View{Name: name}
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
		st.Kind = kindMutex
	}
	return st
}
