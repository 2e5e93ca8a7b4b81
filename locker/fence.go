package locker

import (
	"sync"

	"github.com/locktag/locktag/locker/internal/lockerr"
)

// Errors of the protected side (Fence, Fenced).
var (
	// ErrStaleToken is returned for a fencing token older than one the
	// resource has already seen: its holder lost the lock to a newer holder,
	// and must not read or write the resource any more.
	ErrStaleToken = lockerr.ErrStaleToken
	// ErrNotClaimed is returned by Fence.Check and Fenced.Store for a token
	// that did not claim the resource first (Fence.Claim, Fenced.Load): a
	// mistake in the caller, not a lost lock.
	ErrNotClaimed = lockerr.ErrNotClaimed
)

// Fence is the protected side of fencing, kept in memory: for each resource
// it remembers the largest fencing token that reached it and refuses older
// ones with ErrStaleToken. Claim a resource before reading it and Check
// the claim atomically with the write (a read-modify-write); Admit fences
// a blind write only. It is the model of the check a database or a Redis
// script makes; docs/locking.md#fencing-tokens shows the SQL and why
// write-only fencing loses updates. The zero Fence is ready to use and
// safe for concurrent use.
type Fence struct {
	mu   sync.Mutex
	last map[string]fenceState
}

// Claim records token as the holder of resource before the holder reads it,
// or returns ErrStaleToken when a larger token reached the resource before.
// Claiming again with the same token succeeds. After a Claim, check each
// write with Check, not Admit (which refuses a token equal to the last).
func (f *Fence) Claim(resource string, token int64) error {
	return f.apply(resource, func(s *fenceState) error { return s.claim(token) })
}

// Check returns nil if token's claim on resource still stands: call it in
// the same atomic step as the write. It returns ErrStaleToken when a larger
// token has reached the resource since, and ErrNotClaimed when token never
// claimed it. Check changes nothing.
func (f *Fence) Check(resource string, token int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.last[resource]
	return s.check(token)
}

// Admit records token for resource, or returns ErrStaleToken when a token at
// least as large reached it before. It fences one write and nothing the
// holder read before it (see Fence, "Write-only fencing"): use it for blind
// writes and idempotent appends, and Claim with Check for a
// read-modify-write. Nested holds share their root's token, so a holder may
// write more than once: Admit accepts a token equal to the last one only
// through AdmitAgain.
func (f *Fence) Admit(resource string, token int64) error {
	return f.apply(resource, func(s *fenceState) error { return s.admit(token, false) })
}

// AdmitAgain is Admit that also accepts the last admitted token, for a
// holder that writes the same resource several times under one lock.
func (f *Fence) AdmitAgain(resource string, token int64) error {
	return f.apply(resource, func(s *fenceState) error { return s.admit(token, true) })
}

func (f *Fence) apply(resource string, op func(*fenceState) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.last[resource]
	if err := op(&s); err != nil {
		return err
	}
	if f.last == nil {
		f.last = make(map[string]fenceState)
	}
	f.last[resource] = s
	return nil
}

// Fenced is a value that is read and written only with a fencing token: a
// Fence around one value, kept in memory. Load claims the value and reads
// it, Store writes it if the claim still stands, and Update does both around
// a function, so a read-modify-write by a holder that lost its lock to a
// newer holder fails with ErrStaleToken instead of overwriting the newer
// holder's update. The zero Fenced holds T's zero value and is ready to use;
// it is safe for concurrent use and must not be copied after first use.
type Fenced[T any] struct {
	mu sync.Mutex
	s  fenceState
	v  T
}

// NewFenced returns a Fenced holding v that no token has claimed yet.
func NewFenced[T any](v T) *Fenced[T] {
	return &Fenced[T]{v: v}
}

// Load claims the value with token (as Fence.Claim) and returns it, or
// returns ErrStaleToken when a larger token claimed it before.
func (c *Fenced[T]) Load(token int64) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.s.claim(token); err != nil {
		var zero T
		return zero, err
	}
	return c.v, nil
}

// Store writes v if token's claim (a Load or an Update) still stands. It
// returns ErrStaleToken when a larger token has claimed the value since,
// and ErrNotClaimed when token never claimed it; then nothing is written.
func (c *Fenced[T]) Store(token int64, v T) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.s.check(token); err != nil {
		return err
	}
	c.v = v
	return nil
}

// Update claims the value with token, calls fn with it and stores fn's
// result, in one step; it returns the value stored. It returns
// ErrStaleToken, without calling fn, when a larger token claimed the value
// before, and fn's error, storing nothing, when fn fails (the claim stays).
// fn runs with the value locked: keep it short, and do not call the
// Fenced's methods from it.
func (c *Fenced[T]) Update(token int64, fn func(T) (T, error)) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero T
	if err := c.s.claim(token); err != nil {
		return zero, err
	}
	v, err := fn(c.v)
	if err != nil {
		return zero, err
	}
	c.v = v
	return v, nil
}

// fenceState is one resource's fence: the largest token that reached it.
// The zero fenceState has seen none.
type fenceState struct {
	last int64
	seen bool // last is a token, not the zero value
}

// claim records token as the holder, or returns ErrStaleToken when a
// larger token came before.
func (s *fenceState) claim(token int64) error {
	if s.seen && token < s.last {
		return ErrStaleToken
	}
	s.last, s.seen = token, true
	return nil
}

// check returns nil if token's claim still stands, ErrStaleToken when a
// larger token came since, ErrNotClaimed when token never claimed.
func (s fenceState) check(token int64) error {
	switch {
	case s.seen && token == s.last:
		return nil
	case s.seen && token < s.last:
		return ErrStaleToken
	}
	return ErrNotClaimed
}

// admit records token for a blind write, or returns ErrStaleToken when a
// token at least as large came before (an equal one is accepted again
// with again).
func (s *fenceState) admit(token int64, again bool) error {
	if s.seen && (token < s.last || token == s.last && !again) {
		return ErrStaleToken
	}
	s.last, s.seen = token, true
	return nil
}
