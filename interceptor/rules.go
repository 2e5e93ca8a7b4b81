package interceptor

import (
	"github.com/locktag/locktag/interceptor/internal/rpccore"
	"github.com/locktag/locktag/locker/guard"
)

// Rules maps full method names, "/shop.v1.Inventory/Reserve", to lock tags
// such as `key:"sku:{req.sku}" expire:"10s" wait:"1s"` (see docs/tags.md).
// A rule here replaces the method's proto option, if it has one; an empty
// tag removes the proto option's rule, so the method takes no lock.
type Rules map[string]string

// Errors the constructors return (inside a *RuleError when they concern one
// rule). Tag and template mistakes wrap the keyexpr package's errors instead
// (keyexpr.ErrSyntax, keyexpr.ErrUnknownSource, ...). The connect adapter
// (interceptor/connectrpc) returns the same values.
var (
	// ErrUnknownMethod: a rule names a method that is not well-formed
	// ("/package.Service/Method") or not in the descriptor registry
	// (protoregistry.GlobalFiles unless WithRegistry), usually a typo.
	ErrUnknownMethod = rpccore.ErrUnknownMethod
	// ErrBadField: a {req...} placeholder names a field the request message
	// does not have, or one that cannot name a lock: repeated, map, message
	// or floating-point.
	ErrBadField = rpccore.ErrBadField
	// ErrReqInStream: a rule for a streaming method uses {req...}. The lock is
	// taken before the handler reads the first message, so only md, method and
	// application sources are available.
	ErrReqInStream = rpccore.ErrReqInStream
	// ErrBadSource: a placeholder path a source cannot serve ({md.Bad Key},
	// {method.x}, an unknown ContextSource path), or a WithSource call that
	// redefines a built-in source or passes nil (then it also matches
	// locker.ErrBadOption).
	ErrBadSource = rpccore.ErrBadSource
)

// RuleError describes a rule that cannot be used: guard.RuleError, which
// the connect adapter returns too. New returns it (joined with the others
// when several rules are wrong); UnaryServerInterceptor and
// StreamServerInterceptor panic with it.
type RuleError = guard.RuleError
