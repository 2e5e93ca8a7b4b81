package rpccore

import (
	"context"
	"errors"
	"math"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Locks is what an adapter's New builds: its settings and one lock guard
// per unary method and per stream.
type Locks[R, EH any] struct {
	S             *Settings[R, EH]
	Unary, Stream map[string]*guard.Lock[R]
}

// NewLocks evaluates opts (eh is the default error handler; adapter names
// the adapter in option errors) and compiles rules with the sources
// sources returns for each method.
func NewLocks[R, EH any](adapter string, l *locker.Locker, rules map[string]string, opts []guard.Option, eh EH,
	sources func(m Method, app keyexpr.Sources[R]) keyexpr.Sources[R]) (*Locks[R, EH], error) {
	if l == nil {
		return nil, guard.ErrNilLocker
	}
	s, err := Evaluate[R](adapter, guard.LockGuards, opts, eh)
	if err != nil {
		return nil, err
	}
	ls := &Locks[R, EH]{S: s}
	ls.Unary, ls.Stream, err = Compile(l, rules, s, func(m Method) keyexpr.Sources[R] { return sources(m, s.Sources) }, opts)
	if err != nil {
		return nil, err
	}
	return ls, nil
}

// Idem is what an adapter's NewIdempotency builds: the guard (its requests
// are the call's context), the settings and each method's response type.
type Idem[R, EH any] struct {
	G       *guard.Idempotency[context.Context]
	S       *Settings[R, EH]
	Methods map[string]protoreflect.MessageType
}

// NewIdem builds an idempotency guard for the unary methods named. The
// request has no size cap unless guard.WithMaxRequestBytes sets one.
// adapter names the adapter in option errors.
func NewIdem[R, EH any](adapter string, l *locker.Locker, methods []string, opts []guard.Option, eh EH) (*Idem[R, EH], error) {
	s, err := Evaluate[R](adapter, guard.IdempotencyGuards, opts, eh)
	errs := []error{err}
	all := append([]guard.Option{guard.WithMaxRequestBytes(math.MaxInt64)}, opts...)
	g, err := guard.NewIdempotency[context.Context](l, RecordFormat, all...)
	if errors.Is(err, guard.ErrNilLocker) {
		return nil, err
	}
	ig := &Idem[R, EH]{G: g, S: s}
	errs = append(errs, err)
	if s != nil {
		ig.Methods, err = ResponseTypes(s.Files, s.Types, methods)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ig, nil
}
