package locker

import (
	"errors"
	"fmt"
	"strings"
)

// ErrQuorum: a Redlock operation did not reach a majority of the masters
// because some of them failed. Errors that match it are *QuorumError values
// and also match ErrUnavailable.
var ErrQuorum = errors.New("locker: quorum not reached")

// QuorumError reports a Redlock operation that failed on too many masters.
type QuorumError struct {
	Op   string  // "obtain", "release", "extend", "ttl"
	Need int     // the quorum: N/2+1
	OK   int     // masters that answered as hoped
	Errs []error // per master, in the order given; nil where it answered
}

// Error lists the operation, the count of masters that answered as hoped
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

// Unwrap makes a QuorumError match ErrQuorum and ErrUnavailable.
func (e *QuorumError) Unwrap() []error { return []error{ErrQuorum, ErrUnavailable} }

// nodeReply is one master's answer to a fanned-out call.
type nodeReply struct {
	v   any
	err error
}

// tally is the count of one quorum operation's answers: every quorum
// operation decides through it.
type tally struct {
	op     string
	need   int // the quorum
	yes    int // masters that answered as hoped
	no     int // masters that answered, otherwise
	failed int // masters that did not answer (errs[i] set)
	errs   []error
}

// count tallies res: a master's error counts as failed; otherwise yes
// judges its reply (an error from yes, such as a malformed reply, counts as
// failed too).
func count(op string, need int, res []nodeReply, yes func(i int, v any) (bool, error)) tally {
	t := tally{op: op, need: need, errs: make([]error, len(res))}
	for i, nr := range res {
		ok, err := false, nr.err
		if err == nil {
			ok, err = yes(i, nr.v)
		}
		switch {
		case err != nil:
			t.errs[i] = err
			t.failed++
		case ok:
			t.yes++
		default:
			t.no++
		}
	}
	return t
}

// won reports a majority of yes answers.
func (t tally) won() bool { return t.yes >= t.need }

// refused reports so many no answers that no majority of yes is possible,
// whatever the failed masters would have said.
func (t tally) refused() bool { return t.no > len(t.errs)-t.need }

// broken reports so many failed masters that the answers left cannot
// decide: the operation's outcome is unknown.
func (t tally) broken() bool { return t.failed > len(t.errs)-t.need }

// err is the tally as a *QuorumError.
func (t tally) err() error { return &QuorumError{Op: t.op, Need: t.need, OK: t.yes, Errs: t.errs} }
