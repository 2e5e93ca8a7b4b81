package rpccore

import (
	"errors"
	"fmt"
	"slices"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Settings are an RPC adapter's own options, beside the guard's: R is its
// key sources' request type, EH its error handler type.
type Settings[R, EH any] struct {
	Sources      keyexpr.Sources[R]
	ErrorHandler EH
	FailOpen     []string
	ProtoOptions bool
	Files        *protoregistry.Files
	Types        *protoregistry.Types
}

// Evaluate starts from the defaults and the adapter's default error
// handler, and applies the adapter options among opts for guards of t.
func Evaluate[R, EH any](adapter string, t guard.Target, opts []guard.Option, eh EH) (*Settings[R, EH], error) {
	s := &Settings[R, EH]{
		ErrorHandler: eh,
		ProtoOptions: true,
		Files:        protoregistry.GlobalFiles,
		Types:        protoregistry.GlobalTypes,
	}
	if err := guard.ApplyAdapterOptions(adapter, t, opts, s); err != nil {
		return nil, err
	}
	return s, nil
}

// WithSource is the adapters' WithSource; builtins cannot be redefined.
func WithSource[R, EH any](owner, name string, src keyexpr.Source[R], builtins []string) guard.Option {
	return guard.AdapterOption(owner, "WithSource", guard.LockGuards, func(s *Settings[R, EH]) error {
		switch {
		case name == "":
			return fmt.Errorf("%w: empty source name", ErrBadSource)
		case slices.Contains(builtins, name):
			return fmt.Errorf("%w: %q is a built-in source", ErrBadSource, name)
		case src == nil:
			return fmt.Errorf("%w: nil source for %q", ErrBadSource, name)
		}
		s.Sources = s.Sources.With(name, src)
		return nil
	})
}

// WithErrorHandler is the adapters' WithErrorHandler; isNil says h is nil.
// owner, here and in the other options, is the adapter's package name.
func WithErrorHandler[R, EH any](owner string, h EH, isNil bool) guard.Option {
	return guard.AdapterOption(owner, "WithErrorHandler", guard.AllGuards, func(s *Settings[R, EH]) error {
		if isNil {
			return errors.New("nil handler")
		}
		s.ErrorHandler = h
		return nil
	})
}

// WithFailOpenFor is the adapters' WithFailOpenFor.
func WithFailOpenFor[R, EH any](owner string, methods []string) guard.Option {
	return guard.AdapterOption(owner, "WithFailOpenFor", guard.LockGuards, func(s *Settings[R, EH]) error {
		s.FailOpen = append(s.FailOpen, methods...)
		return nil
	})
}

// WithProtoOptions is the adapters' WithProtoOptions.
func WithProtoOptions[R, EH any](owner string, on bool) guard.Option {
	return guard.AdapterOption(owner, "WithProtoOptions", guard.LockGuards, func(s *Settings[R, EH]) error {
		s.ProtoOptions = on
		return nil
	})
}

// WithRegistry is the adapters' WithRegistry; nil keeps the default.
func WithRegistry[R, EH any](owner string, files *protoregistry.Files, types *protoregistry.Types) guard.Option {
	return guard.AdapterOption(owner, "WithRegistry", guard.AllGuards, func(s *Settings[R, EH]) error {
		if files != nil {
			s.Files = files
		}
		if types != nil {
			s.Types = types
		}
		return nil
	})
}
