// Package tally decides every Redlock operation: the masters' answers to
// one fanned-out call are counted once (Count), and the count says whether
// the operation won, was refused, or cannot be decided (Err: an *Error).
package tally

// Reply is one master's answer to a fanned-out call.
type Reply struct {
	V   any
	Err error
}

// Tally is the count of one quorum operation's answers: every quorum
// operation decides through it.
type Tally struct {
	Op     string
	Need   int // the quorum
	Yes    int // masters that answered as hoped
	No     int // masters that answered, otherwise
	Failed int // masters that did not answer (errs[i] set)
	Errs   []error
}

// Count tallies res: a master's error counts as failed; otherwise yes
// judges its reply (an error from yes, such as a malformed reply, counts as
// failed too).
func Count(op string, need int, res []Reply, yes func(i int, v any) (bool, error)) Tally {
	t := Tally{Op: op, Need: need, Errs: make([]error, len(res))}
	for i, nr := range res {
		ok, err := false, nr.Err
		if err == nil {
			ok, err = yes(i, nr.V)
		}
		switch {
		case err != nil:
			t.Errs[i] = err
			t.Failed++
		case ok:
			t.Yes++
		default:
			t.No++
		}
	}
	return t
}

// Won reports a majority of yes answers.
func (t Tally) Won() bool { return t.Yes >= t.Need }

// Refused reports so many no answers that no majority of yes is possible,
// whatever the failed masters would have said.
func (t Tally) Refused() bool { return t.No > len(t.Errs)-t.Need }

// Broken reports so many failed masters that the answers left cannot
// decide: the operation's outcome is unknown.
func (t Tally) Broken() bool { return t.Failed > len(t.Errs)-t.Need }

// Err is the error of a tally that cannot decide: an *Error.
func (t Tally) Err() error { return &Error{Op: t.Op, Need: t.Need, OK: t.Yes, Errs: t.Errs} }
