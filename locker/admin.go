package locker

import (
	"github.com/locktag/locktag/locker/internal/admin"
	"github.com/locktag/locktag/locker/internal/backend"
)

// admin is the backend's operator side (both backends have one): the
// operator calls are package internal/admin's, over it.
func (l *Locker) admin() backend.Admin { return l.be.(backend.Admin) }

// kinds are the lock kinds l's backend keeps.
func (l *Locker) kinds() []string {
	if l.be.Semaphores() != nil {
		return []string{KindMutex}
	}
	return []string{KindMutex, KindSemaphore, KindRW}
}

// state is v as a State.
func state(v *admin.View) *State {
	st := &State{Name: v.Name, Kind: v.Kind, Limit: v.Limit, Queued: v.Queued}
	exclusive := -1
	for i, h := range v.Holders {
		st.Holders = append(st.Holders, Holder(h))
		if v.Holder == &v.Holders[i] {
			exclusive = i
		}
	}
	if exclusive >= 0 {
		st.Holder = &st.Holders[exclusive]
	}
	for _, w := range v.Waiters {
		st.Waiters = append(st.Waiters, Waiter(w))
	}
	return st
}
