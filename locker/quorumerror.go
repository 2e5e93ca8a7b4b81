package locker

import (
	"errors"
	"fmt"
	"strings"

	"github.com/locktag/locktag/locker/internal/tally"
)

// QuorumError reports a Redlock operation that failed on too many masters
// for the answers left to decide it. It matches ErrQuorum and
// ErrUnavailable.
//
// It also matches ErrProtocol when the masters that refused the call
// because they hold a record of another protocol (docs/protocol.md) are
// enough on their own to deny the quorum — every failing master refused
// so, for one: retrying does not help until the record is gone or the
// releases sharing the masters agree, so the call is treated as a protocol
// refusal (never failed open) as on one deployment. Each master's own
// error stays in Errs.
type QuorumError struct {
	// Op is the operation: "obtain", "release", "extend", "ttl",
	// "inspect", "force-release".
	Op string
	// Need is the quorum: N/2+1 of N masters.
	Need int
	// OK is the count of masters that answered as hoped.
	OK int
	// Errs holds each master's error, in the order the masters were
	// given to NewRedlock; nil where the master answered.
	Errs []error
}

func init() {
	tally.NewError = func(op string, need, ok int, errs []error) error {
		return &QuorumError{Op: op, Need: need, OK: ok, Errs: errs}
	}
}

// Error names the operation, the count of masters that answered as hoped
// and each failing master's error.
func (e *QuorumError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "locker: quorum not reached: %s: %d of %d masters (need %d)", e.Op, e.OK, len(e.Errs), e.Need)
	for i, err := range e.Errs {
		if err != nil {
			fmt.Fprintf(&b, "; master %d: %v", i, err)
		}
	}
	return b.String()
}

// Unwrap makes a QuorumError match ErrQuorum and ErrUnavailable, and
// ErrProtocol when protocol refusals alone deny the quorum (see
// QuorumError).
func (e *QuorumError) Unwrap() []error {
	refused := 0
	for _, err := range e.Errs {
		if err != nil && errors.Is(err, ErrProtocol) {
			refused++
		}
	}
	if refused > 0 && len(e.Errs)-refused < e.Need {
		return []error{ErrQuorum, ErrUnavailable, ErrProtocol}
	}
	return []error{ErrQuorum, ErrUnavailable}
}
