package lockecho5

import (
	"errors"

	"github.com/locktag/locktag/middleware/lockecho5/internal/httpcore"
)

// Sentinel errors. Construction errors wrap ErrBadRule, locker.ErrBadOption
// or guard.ErrNilLocker (or are a *keyexpr.TagError for a bad tag);
// request-time errors from the body source wrap ErrBodyTooLarge,
// ErrBodyNotJSON or ErrBodyNotScalar and reach an ErrorHandler in
// guard.Outcome.Err inside a *keyexpr.TemplateError, so errors.Is finds
// them. They are the same values as the Gin and net/http adapters', so
// errors.Is matches across all three.
var (
	// ErrBadRule reports a Rules entry whose key is not "METHOD /path", or
	// a key template naming a path parameter its route does not have
	// (LockRules, RouteCheck.Check).
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
	// guard.ErrTagMistake). RouteCheck finds it before traffic.
	ErrNoRouteParam = httpcore.ErrNoRouteParam
)

// ErrNotChecked reports a route RouteCheck.Check could not check: one
// added before NewRouteCheck installed its hook.
var ErrNotChecked = errors.New("lockecho5: route not checked")
