package httpcore

import "github.com/locktag/locktag/locker/guard"

// The adapters' request-time errors: the guard's, so errors.Is matches
// across adapters (each adapter module holds its own copy of this
// package).
var (
	ErrBodyTooLarge  = guard.ErrBodyTooLarge
	ErrBodyNotJSON   = guard.ErrBodyNotJSON
	ErrBodyNotScalar = guard.ErrBodyNotScalar
	ErrNoRouteParam  = guard.ErrNoRouteParam
)
