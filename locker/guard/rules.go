package guard

import "errors"

// The RPC adapters' rule errors (interceptor, interceptor/connectrpc), each
// re-exported by both, so errors.Is matches whichever returned one.
var (
	// ErrUnknownMethod: a rule names a method the service descriptors do
	// not have.
	ErrUnknownMethod = errors.New("guard: unknown method")
	// ErrBadField: a {req...} placeholder names no field of the request
	// message, or a field that is not a scalar.
	ErrBadField = errors.New("guard: bad request field")
	// ErrReqInStream: a {req...} placeholder in the rule of a streaming
	// method, whose request is not known when the lock is taken.
	ErrReqInStream = errors.New("guard: request field in a stream rule")
	// ErrBadSource: a placeholder path a source cannot serve, or a source
	// option that redefines a built-in source.
	ErrBadSource = errors.New("guard: bad source")
)

// RuleError describes an RPC method's rule that cannot be used: the RPC
// adapters' constructors return it (joined with the others when several
// rules are wrong), and errors.As finds it.
type RuleError struct {
	Method string // full method name, "/shop.v1.Inventory/Reserve"
	Origin string // "Rules" or "proto option (locktag.v1.lock) in <file>.proto"
	Tag    string // the tag as given (for a proto option, as built from it)
	// Err wraps the cause: a *keyexpr.TagError (with the field and byte
	// position in Tag) or one of the sentinel errors above.
	Err error
}

// Error returns "guard: rule for <method> (<origin>): <cause>".
func (e *RuleError) Error() string {
	return "guard: rule for " + e.Method + " (" + e.Origin + "): " + e.Err.Error()
}

// Unwrap returns e.Err.
func (e *RuleError) Unwrap() error { return e.Err }
