package interceptor

import (
	"github.com/locktag/locktag/interceptor/internal/rpccore"
	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Option configures New, NewIdempotency and the interceptors they make.
// It is guard.Option, so the guard's options and this package's With...
// options go in one list. Every adapter accepts the guard's options; only
// this one accepts this package's, and another adapter's option is refused
// at construction with an error wrapping locker.ErrBadOption that names
// both adapters.
type Option = guard.Option

// The names that option errors give this adapter: the package its options
// belong to, and the adapter that was given an option.
const (
	pkgName     = "interceptor"
	adapterName = "interceptor (gRPC)"
)

// settings are this adapter's own options, beside the guard's.
type settings = rpccore.Settings[*Call, ErrorHandler]

// WithSource registers an application source for New: a placeholder
// {name.path} in any rule is bound by calling src(path) when the
// interceptor is built (an error there is a construction error), and the
// Getter it returns is called for every locked call. ContextSource builds
// one for values in the call's context, such as {ctx.user}. The built-in
// sources req, md and method cannot be redefined (ErrBadSource). There are
// no application sources by default.
func WithSource(name string, src keyexpr.Source[*Call]) Option {
	return rpccore.WithSource[*Call, ErrorHandler](pkgName, name, src, builtinSources)
}

// WithErrorHandler replaces the mapping of refusals to the errors the
// client sees, for New and NewIdempotency. h is called when a guard
// refused a call (the handler did not run) and when the lock or claim was
// lost while the handler ran; what it returns is the call's error. If h
// returns nil, DefaultErrorHandler's error is used: the handler never runs
// without its lock. The default is DefaultErrorHandler.
func WithErrorHandler(h ErrorHandler) Option {
	return rpccore.WithErrorHandler[*Call](pkgName, h, h == nil)
}

// WithFailOpenFor makes the rules of the full methods named fail open, as
// guard.WithFailOpen does for every rule: when Redis is unavailable the
// handler runs without a lock. Each method must have a rule. New only.
// The default is fail-closed.
func WithFailOpenFor(fullMethods ...string) Option {
	return rpccore.WithFailOpenFor[*Call, ErrorHandler](pkgName, fullMethods)
}

// WithProtoOptions turns reading rules from (locktag.v1.lock) method
// options on or off, for New. When on, every method in the registry (see
// WithRegistry) whose options carry the extension gets that rule, unless
// Rules has an entry for it. The default is on.
func WithProtoOptions(on bool) Option {
	return rpccore.WithProtoOptions[*Call, ErrorHandler](pkgName, on)
}

// WithRegistry sets where methods are looked up (to validate {req...}
// fields, to tell unary from streaming methods, to read proto options) and
// where response types are found (to replay idempotent calls), for New and
// NewIdempotency. A nil argument keeps its default: protoregistry.GlobalFiles
// and protoregistry.GlobalTypes, where generated code registers itself.
func WithRegistry(files *protoregistry.Files, types *protoregistry.Types) Option {
	return rpccore.WithRegistry[*Call, ErrorHandler](pkgName, files, types)
}
