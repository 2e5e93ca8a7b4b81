package interceptor

import (
	"github.com/locktag/locktag/interceptor/internal/rpccore"
	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Option configures New, NewIdempotency and the interceptors they make: a
// guard.Option (the guard's settings, accepted by every adapter) or one of
// this package's With... options, which only this adapter accepts —
// passing one to another adapter, or another adapter's to this one, does
// not compile.
type Option interface{ GRPCOption() }

// grpcOption is an option only this adapter accepts.
type grpcOption struct{ opt guard.Option }

func (grpcOption) GRPCOption()                 {}
func (o grpcOption) GuardOption() guard.Option { return o.opt }

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
	return grpcOption{rpccore.WithSource[*Call, ErrorHandler](name, src, builtinSources)}
}

// WithErrorHandler replaces the mapping of refusals to the errors the
// client sees, for New and NewIdempotency. h is called when a guard
// refused a call (the handler did not run) and when the lock or claim was
// lost while the handler ran; what it returns is the call's error. If h
// returns nil, DefaultErrorHandler's error is used: the handler never runs
// without its lock. The default is DefaultErrorHandler.
func WithErrorHandler(h ErrorHandler) Option {
	return grpcOption{rpccore.WithErrorHandler[*Call](h, h == nil)}
}

// WithFailOpenFor makes the rules of the full methods named fail open, as
// guard.WithFailOpen does for every rule: when Redis is unavailable the
// handler runs without a lock. Each method must have a rule. New only.
// The default is fail-closed.
func WithFailOpenFor(fullMethods ...string) Option {
	return grpcOption{rpccore.WithFailOpenFor[*Call, ErrorHandler](fullMethods)}
}

// WithProtoOptions turns reading rules from (locktag.v1.lock) method
// options on or off, for New. When on, every method in the registry (see
// WithRegistry) whose options carry the extension gets that rule, unless
// Rules has an entry for it. The default is on.
func WithProtoOptions(on bool) Option {
	return grpcOption{rpccore.WithProtoOptions[*Call, ErrorHandler](on)}
}

// WithRegistry sets where methods are looked up (to validate {req...}
// fields, to tell unary from streaming methods, to read proto options) and
// where response types are found (to replay idempotent calls), for New and
// NewIdempotency. A nil argument keeps its default: protoregistry.GlobalFiles
// and protoregistry.GlobalTypes, where generated code registers itself.
func WithRegistry(files *protoregistry.Files, types *protoregistry.Types) Option {
	return grpcOption{rpccore.WithRegistry[*Call, ErrorHandler](files, types)}
}
