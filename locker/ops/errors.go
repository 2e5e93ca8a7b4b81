package ops

import "errors"

// Sentinel errors.
var (
	// ErrUnauthenticated is what an authorizer returns (or wraps) when it
	// does not know who is asking: the handler answers 401. Any other
	// authorizer error answers 403.
	ErrUnauthenticated = errors.New("ops: unauthenticated")
	// ErrForbidden is a ready error for an authorizer that knows who asks
	// and refuses: the handler answers 403. Without an authorizer every
	// Release is refused with it.
	ErrForbidden = errors.New("ops: forbidden")
	// ErrBadHandle: a handle the handler did not make (malformed, or
	// encrypted under another key). The handler answers 400.
	ErrBadHandle = errors.New("ops: bad handle")
)

// Action is what an authorizer is asked to allow.
type Action int

// The actions.
const (
	// View: the page, the list of locks, one lock's detail.
	View Action = iota + 1
	// Release: force-release one lock.
	Release
)

// String returns "view" or "release".
func (a Action) String() string {
	switch a {
	case View:
		return "view"
	case Release:
		return "release"
	}
	return "unknown"
}
