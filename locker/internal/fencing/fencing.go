// Package fencing is the protected side's check of fencing tokens, for one
// resource: the state behind locker.Fence and locker.Fenced. A holder
// claims the resource with its token before reading it and checks the
// claim with the write; a larger token that arrived since makes the older
// one stale. See docs/locking.md#fencing-tokens.
package fencing

import "github.com/locktag/locktag/locker/internal/lockerr"

// State is one resource's fence: the largest token that reached it. The
// zero State has seen none.
type State struct {
	last int64
	seen bool // last is a token, not the zero value
}

// Claim records token as the holder, or returns lockerr.ErrStaleToken
// when a larger token came before.
func (s *State) Claim(token int64) error {
	if s.seen && token < s.last {
		return lockerr.ErrStaleToken
	}
	s.last, s.seen = token, true
	return nil
}

// Check returns nil if token's claim still stands, lockerr.ErrStaleToken
// when a larger token came since, lockerr.ErrNotClaimed when token never
// claimed.
func (s State) Check(token int64) error {
	switch {
	case s.seen && token == s.last:
		return nil
	case s.seen && token < s.last:
		return lockerr.ErrStaleToken
	}
	return lockerr.ErrNotClaimed
}

// Admit records token for a blind write, or returns lockerr.ErrStaleToken
// when a token at least as large came before (equal is accepted again).
func (s *State) Admit(token int64, again bool) error {
	if s.seen && (token < s.last || token == s.last && !again) {
		return lockerr.ErrStaleToken
	}
	s.last, s.seen = token, true
	return nil
}
