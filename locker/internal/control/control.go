package control

import (
	"strings"
	"sync"
)

// Channel is the control channel's name for the key prefix.
func Channel(prefix string) string { return prefix + "ctl" }

// Each calls fn for every owner token of a notice, "token[,token...]
// reason"; a malformed notice calls nothing.
func Each(notice string, fn func(token, reason string)) {
	tokens, reason, ok := strings.Cut(notice, " ")
	if !ok {
		return
	}
	for tok := range strings.SplitSeq(tokens, ",") {
		fn(tok, reason)
	}
}

// Table is a Locker's live leases by owner token, what notices are
// matched against. A lease is in it from when it has something a notice
// must stop (renewals, or a context to cancel) until it ends: a lease
// nobody needs to stop costs the table nothing, and a leaked one is not
// kept alive by it. The zero Table is ready to use.
type Table[T comparable] struct {
	mu    sync.Mutex
	m     map[string]T
	empty chan struct{} // closed when the last entry goes (Emptied); nil: none asked
}

// Add puts v in under token.
func (t *Table[T]) Add(token string, v T) {
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[string]T)
	}
	t.m[token] = v
	t.mu.Unlock()
}

// Remove takes token out if it is still v's.
func (t *Table[T]) Remove(token string, v T) {
	t.mu.Lock()
	if t.m[token] == v {
		delete(t.m, token)
		if len(t.m) == 0 && t.empty != nil {
			close(t.empty)
			t.empty = nil
		}
	}
	t.mu.Unlock()
}

// Snapshot returns the entries now in the table.
func (t *Table[T]) Snapshot() []T {
	t.mu.Lock()
	defer t.mu.Unlock()
	vs := make([]T, 0, len(t.m))
	for _, v := range t.m {
		vs = append(vs, v)
	}
	return vs
}

// Emptied returns a channel that is closed once the table has no entry:
// at once if it has none now.
func (t *Table[T]) Emptied() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m) == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if t.empty == nil {
		t.empty = make(chan struct{})
	}
	return t.empty
}

// Get returns token's entry, if any.
func (t *Table[T]) Get(token string) (T, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[token]
	return v, ok
}
