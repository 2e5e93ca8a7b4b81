package httpcore

import (
	"errors"

	"github.com/locktag/locktag/locker/guard"
)

// The adapters' request-time errors; each adapter re-exports them under
// its own names, so errors.Is matches across both.
var (
	ErrBodyTooLarge  error = &twoSentinels{"middleware: request body too large", guard.ErrTooLarge}
	ErrBodyNotJSON         = errors.New("middleware: request body is not valid JSON")
	ErrBodyNotScalar       = errors.New("middleware: body field is not a string, number or boolean")
	ErrNoRouteParam  error = &twoSentinels{"middleware: the route has no such path parameter", guard.ErrTagMistake}
)

// twoSentinels is a sentinel of the adapters that also matches one of the
// guard's, so the guard can classify it.
type twoSentinels struct {
	msg   string
	guard error
}

func (e *twoSentinels) Error() string { return e.msg }
func (e *twoSentinels) Unwrap() error { return e.guard }
