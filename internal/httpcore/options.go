package httpcore

import (
	"errors"
	"net/http"
	"slices"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
)

// DefaultIdempotencyHeader is the request header carrying the key.
const DefaultIdempotencyHeader = "Idempotency-Key"

// DefaultReplayHeaders returns the response headers stored and replayed
// by default; each call returns a new slice.
func DefaultReplayHeaders() []string {
	return []string{
		"Content-Type", "Content-Language", "Content-Encoding", "Content-Disposition",
		"Location", "ETag", "Last-Modified",
	}
}

// Settings are an HTTP adapter's own options, beside the guard's: R is
// its request type, EH its error handler type.
type Settings[R, EH any] struct {
	ErrorHandler  EH
	Sources       keyexpr.Sources[R] // the application's
	Header        string
	ReplayHeaders []string // canonical
	// PathValue and Route are read by the net/http adapter only (its
	// WithPathValue and WithRoute); the defaults are ServeMux's.
	PathValue func(r *http.Request, name string) string
	Route     func(r *http.Request) string
}

// Evaluate applies the adapter options among opts for guards of target t,
// starting from the defaults and the adapter's default error handler.
// adapter names the adapter in errors (guard.ApplyAdapterOptions).
func Evaluate[R, EH any](adapter string, t guard.Target, opts []guard.Option, eh EH) (*Settings[R, EH], error) {
	s := &Settings[R, EH]{
		ErrorHandler:  eh,
		Header:        DefaultIdempotencyHeader,
		ReplayHeaders: canonical(DefaultReplayHeaders()),
		PathValue:     (*http.Request).PathValue,
		Route:         pattern,
	}
	return s, guard.ApplyAdapterOptions(adapter, t, opts, s)
}

// NewIdempotency builds an adapter's idempotency guard and its settings,
// which evaluate makes from opts. The error is guard.ErrNilLocker alone,
// or the options' and the guard's errors joined.
func NewIdempotency[R, EH any](l *locker.Locker, opts []guard.Option,
	evaluate func(guard.Target, []guard.Option) (*Settings[R, EH], error)) (*guard.Idempotency[R], *Settings[R, EH], error) {
	s, err := evaluate(guard.IdempotencyGuards, opts)
	g, gerr := guard.NewIdempotency[R](l, RecordFormat, opts...)
	if errors.Is(gerr, guard.ErrNilLocker) {
		return nil, nil, guard.ErrNilLocker
	}
	if err := errors.Join(err, gerr); err != nil {
		return nil, nil, err
	}
	return g, s, nil
}

// pattern is the ServeMux pattern that matched r.
func pattern(r *http.Request) string { return r.Pattern }

// Must returns v, or panics with err: the adapters' Lock, LockRules and
// Idempotency are their New... constructors for tags written in code.
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func canonical(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = http.CanonicalHeaderKey(n)
	}
	return out
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

// WithSource is the adapters' WithSource.
func WithSource[R, EH any](owner, name string, src keyexpr.Source[R]) guard.Option {
	return guard.AdapterOption(owner, "WithSource", guard.LockGuards, func(s *Settings[R, EH]) error {
		if name == "" || src == nil {
			return errors.New("a source needs a name and a function")
		}
		s.Sources = s.Sources.With(name, src)
		return nil
	})
}

// WithKeyHeader is the adapters' WithKeyHeader.
func WithKeyHeader[R, EH any](owner, name string) guard.Option {
	return guard.AdapterOption(owner, "WithKeyHeader", guard.IdempotencyGuards, func(s *Settings[R, EH]) error {
		if name == "" {
			return errors.New("empty header name")
		}
		s.Header = http.CanonicalHeaderKey(name)
		return nil
	})
}

// WithReplayHeaders is the adapters' WithReplayHeaders.
func WithReplayHeaders[R, EH any](owner string, names ...string) guard.Option {
	return guard.AdapterOption(owner, "WithReplayHeaders", guard.IdempotencyGuards, func(s *Settings[R, EH]) error {
		if slices.Contains(names, "") {
			return errors.New("empty header name")
		}
		s.ReplayHeaders = canonical(names)
		return nil
	})
}
