package tally

import (
	"errors"
	"fmt"
	"strings"

	"github.com/locktag/locktag/locker/internal/lockerr"
)

// Error is the error of a tally that cannot decide (Tally.Err): the
// operation, the quorum, the masters that answered as hoped and each
// master's error. The engine returns it unwrapped, and package locker
// converts it, at its boundary, to its *QuorumError (a type of the same
// fields), which documents its text and what it matches; the methods are
// here so that both say the same.
type Error struct {
	Op   string
	Need int
	OK   int
	Errs []error
}

// Error names the operation, the count of masters that answered as hoped
// and each failing master's error.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "locker: quorum not reached: %s: %d of %d masters (need %d)", e.Op, e.OK, len(e.Errs), e.Need)
	for i, err := range e.Errs {
		if err != nil {
			fmt.Fprintf(&b, "; master %d: %v", i, err)
		}
	}
	return b.String()
}

// Unwrap makes an Error match lockerr.ErrQuorum and lockerr.ErrUnavailable,
// and lockerr.ErrProtocol when the masters that refused a record of
// another protocol are enough on their own to deny the quorum.
func (e *Error) Unwrap() []error {
	refused := 0
	for _, err := range e.Errs {
		if err != nil && errors.Is(err, lockerr.ErrProtocol) {
			refused++
		}
	}
	if refused > 0 && len(e.Errs)-refused < e.Need {
		return []error{lockerr.ErrQuorum, lockerr.ErrUnavailable, lockerr.ErrProtocol}
	}
	return []error{lockerr.ErrQuorum, lockerr.ErrUnavailable}
}
