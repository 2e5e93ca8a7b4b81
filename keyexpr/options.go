package keyexpr

import (
	"fmt"

	"github.com/locktag/locktag/internal/optionerr"
)

// DefaultMaxValueLen is the default cap, in bytes, on one placeholder's raw value.
const DefaultMaxValueLen = 256

// BindOption configures Bind.
type BindOption func(*bindOptions)

type bindOptions struct {
	maxValueLen int
	hashLong    bool
}

var defaultBindOptions = bindOptions{maxValueLen: DefaultMaxValueLen}

// evaluateOptions starts from a copy of the defaults and applies opts.
func evaluateOptions(opts []BindOption) (bindOptions, error) {
	o := defaultBindOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.maxValueLen < 1 {
		return o, fmt.Errorf("%w: keyexpr.WithMaxValueLen(%d): the cap must be at least 1", optionerr.ErrBadOption, o.maxValueLen)
	}
	return o, nil
}

// WithMaxValueLen caps the length, in bytes, of each placeholder's raw value
// (measured before escaping). A longer value makes Key.Eval fail with
// ErrValueTooLong, or is hashed when WithHashLong(true) is given. n must be at
// least 1; otherwise Bind returns an error wrapping locker.ErrBadOption (the
// same value as driver.ErrBadOption). The default is 256.
func WithMaxValueLen(n int) BindOption {
	return func(o *bindOptions) { o.maxValueLen = n }
}

// WithHashLong chooses what Key.Eval does with a value over the cap: with true
// the value is replaced by "%sha256" and the 64 hex digits of its SHA-256, so a
// long value still names a lock of bounded size; with false Eval fails with
// ErrValueTooLong. A tag asks for hashing with long:"hash" (Spec.HashLong). The
// default is false.
func WithHashLong(on bool) BindOption {
	return func(o *bindOptions) { o.hashLong = on }
}
