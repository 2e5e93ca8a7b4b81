package driver

import "errors"

// NormalizeReply converts a script's reply as a client decoded it to the
// types [Driver.Eval] returns: []byte to string, a RESP3 boolean as RESP2
// has it (true to int64(1), false to nil), arrays element by element, in
// place. Anything else (int64, string, nil, an error in an array) is kept.
func NormalizeReply(v any) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case bool:
		if x {
			return int64(1)
		}
		return nil
	case []any:
		for i := range x {
			x[i] = NormalizeReply(x[i])
		}
		return v // v, not x: boxing x again would allocate
	default:
		return v
	}
}

// NotSent marks err as the failure of a call that never reached Redis: the
// error matches ErrNotSent and err. An err that already matches ErrNotSent
// is returned as it is.
func NotSent(err error) error {
	if errors.Is(err, ErrNotSent) {
		return err
	}
	return &notSentError{err: err}
}

// notSentError reads as fmt.Errorf("%w: %w", ErrNotSent, err) does, built
// only when its message is asked for.
type notSentError struct{ err error }

func (e *notSentError) Error() string   { return ErrNotSent.Error() + ": " + e.err.Error() }
func (e *notSentError) Unwrap() []error { return []error{ErrNotSent, e.err} }
