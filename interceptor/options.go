package interceptor

import (
	"fmt"
	"slices"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// settings are this adapter's own options, beside the guard's.
type settings struct {
	sources      keyexpr.Sources[*Call]
	errorHandler ErrorHandler
	failOpen     []string
	protoOptions bool
	files        *protoregistry.Files
	types        *protoregistry.Types
}

// evaluateOptions starts from a copy of the defaults and applies this
// package's options among opts.
func evaluateOptions(t guard.Target, opts []guard.Option) (*settings, error) {
	s := &settings{
		errorHandler: DefaultErrorHandler,
		protoOptions: true,
		files:        protoregistry.GlobalFiles,
		types:        protoregistry.GlobalTypes,
	}
	if err := guard.ApplyAdapterOptions(t, opts, s); err != nil {
		return nil, err
	}
	if s.errorHandler == nil {
		return nil, fmt.Errorf("%w: WithErrorHandler: nil handler", guard.ErrBadOption)
	}
	return s, nil
}

// WithSource registers an application source for New: a placeholder
// {name.path} in any rule is bound by calling src(path) when the
// interceptor is built (an error there is a construction error), and the
// Getter it returns is called for every locked call. ContextSource builds
// one for values in the call's context, such as {ctx.user}. The built-in
// sources req, md and method cannot be redefined (ErrBadSource). There are
// no application sources by default.
func WithSource(name string, src keyexpr.Source[*Call]) guard.Option {
	return guard.AdapterOption("WithSource", guard.LockGuards, func(s *settings) error {
		switch {
		case slices.Contains(builtinSources, name):
			return fmt.Errorf("%w: %q is a built-in source", ErrBadSource, name)
		case src == nil:
			return fmt.Errorf("%w: nil source for %q", ErrBadSource, name)
		}
		s.sources = s.sources.With(name, src)
		return nil
	})
}

// WithErrorHandler replaces the mapping of refusals to the errors the
// client sees, for New and NewIdempotency. h is called when a guard
// refused a call (the handler did not run) and when the lock or claim was
// lost while the handler ran; what it returns is the call's error. If h
// returns nil, DefaultErrorHandler's error is used: the handler never runs
// without its lock. The default is DefaultErrorHandler.
func WithErrorHandler(h ErrorHandler) guard.Option {
	return guard.AdapterOption("WithErrorHandler", guard.AllGuards, func(s *settings) error { s.errorHandler = h; return nil })
}

// WithFailOpenFor makes the rules of the full methods named fail open, as
// guard.WithFailOpen does for every rule: when Redis is unavailable the
// handler runs without a lock. Each method must have a rule. New only.
// The default is fail-closed.
func WithFailOpenFor(fullMethods ...string) guard.Option {
	return guard.AdapterOption("WithFailOpenFor", guard.LockGuards, func(s *settings) error {
		s.failOpen = append(s.failOpen, fullMethods...)
		return nil
	})
}

// WithProtoOptions turns reading rules from (locktag.v1.lock) method
// options on or off, for New. When on, every method in the registry (see
// WithRegistry) whose options carry the extension gets that rule, unless
// Rules has an entry for it. The default is on.
func WithProtoOptions(on bool) guard.Option {
	return guard.AdapterOption("WithProtoOptions", guard.LockGuards, func(s *settings) error {
		s.protoOptions = on
		return nil
	})
}

// WithRegistry sets where methods are looked up (to validate {req...}
// fields, to tell unary from streaming methods, to read proto options) and
// where response types are found (to replay idempotent calls), for New and
// NewIdempotency. A nil argument keeps its default: protoregistry.GlobalFiles
// and protoregistry.GlobalTypes, where generated code registers itself.
func WithRegistry(files *protoregistry.Files, types *protoregistry.Types) guard.Option {
	return guard.AdapterOption("WithRegistry", guard.AllGuards, func(s *settings) error {
		if files != nil {
			s.files = files
		}
		if types != nil {
			s.types = types
		}
		return nil
	})
}
