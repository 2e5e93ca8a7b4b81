package middleware

import (
	"github.com/locktag/locktag/middleware/internal/httpcore"
)

// Sentinel errors. Construction errors wrap ErrBadRule, locker.ErrBadOption
// or guard.ErrNilLocker (or are a *keyexpr.TagError for a bad tag);
// request-time errors from the body source wrap ErrBodyTooLarge,
// ErrBodyNotJSON or ErrBodyNotScalar and reach an ErrorHandler in
// guard.Outcome.Err inside a *keyexpr.TemplateError, so errors.Is finds
// them. A {path.X} naming a parameter the route lacks wraps ErrNoRouteParam.
var (
	// ErrBadRule reports a Rules entry whose key is not "METHOD /path", or
	// whose key template names a path parameter the route does not have.
	ErrBadRule = httpcore.ErrBadRule
	// ErrBodyTooLarge reports a request body longer than the cap set with
	// guard.WithMaxRequestBytes. It also matches guard.ErrTooLarge.
	// Answered with 413.
	ErrBodyTooLarge = httpcore.ErrBodyTooLarge
	// ErrBodyNotJSON reports a request body that a {body...} placeholder
	// could not parse as one JSON value. Answered with 400.
	ErrBodyNotJSON = httpcore.ErrBodyNotJSON
	// ErrBodyNotScalar reports a {body...} placeholder whose field is a JSON
	// object or array. Answered with 400.
	ErrBodyNotScalar = httpcore.ErrBodyNotScalar
	// ErrNoRouteParam reports, at request time, a {path.X} placeholder
	// whose X is not a parameter of the request's route: a mistake in the
	// tag, answered with 500 and logged (it also matches
	// guard.ErrTagMistake). CheckRoutes finds it before traffic.
	ErrNoRouteParam = httpcore.ErrNoRouteParam
)
