package middleware

import "errors"

// Sentinel errors. Construction errors wrap ErrBadOption, ErrBadRule or
// ErrNilLocker (or a *keyexpr.TagError for a bad tag); request-time errors
// from the body source wrap ErrBodyTooLarge, ErrBodyNotJSON or
// ErrBodyNotScalar and reach an ErrorHandler inside a *keyexpr.TemplateError,
// so errors.Is finds them.
var (
	// ErrBadOption reports an invalid option value given to a constructor.
	ErrBadOption = errors.New("middleware: bad option")
	// ErrBadRule reports a Rules entry whose key is not "METHOD /path", or
	// whose key template names a path parameter the route does not have.
	ErrBadRule = errors.New("middleware: bad rule")
	// ErrNilLocker reports a constructor called with a nil *locker.Locker.
	ErrNilLocker = errors.New("middleware: nil locker")
	// ErrBodyTooLarge reports a request body longer than the cap set with
	// WithMaxBodyBytes. Answered with 413.
	ErrBodyTooLarge = errors.New("middleware: request body too large")
	// ErrBodyNotJSON reports a request body that a {body...} placeholder
	// could not parse as one JSON value. Answered with 400.
	ErrBodyNotJSON = errors.New("middleware: request body is not valid JSON")
	// ErrBodyNotScalar reports a {body...} placeholder whose field is a JSON
	// object or array. Answered with 400.
	ErrBodyNotScalar = errors.New("middleware: body field is not a string, number or boolean")
)
