package keyexpr

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Getter extracts the value of one bound placeholder from a request of type R.
// It should return the empty string when the value is absent; Key.Eval turns
// that into ErrMissingValue. An error it returns is wrapped in a *TemplateError
// so errors.Is and errors.As reach it.
type Getter[R any] func(r R) (string, error)

// Source binds a placeholder's path at registration time. It returns an error
// for a path it cannot serve (e.g. a gRPC request field that does not exist);
// that error becomes a registration error. For a bare placeholder such as
// {method} the path is "".
type Source[R any] func(path string) (Getter[R], error)

// Sources maps a source name ("path", "query", "req", "ctx", ...) to its binder.
type Sources[R any] map[string]Source[R]

// Key is a template bound to one transport's sources. It is safe for
// concurrent use.
type Key[R any] struct {
	tmpl    *Template
	getters []Getter[R] // one per placeholder, in order
	opts    bindOptions
}

// Bind binds every placeholder of t to a getter from src, calling each Source
// once per placeholder. It fails with an error wrapping ErrUnknownSource when a
// placeholder names a source that src does not have, and with the Source's own
// error (wrapped in a *TemplateError) when a Source rejects a path. Call it at
// registration time, so that a bad template never reaches a request.
func Bind[R any](t *Template, src Sources[R], opts ...BindOption) (*Key[R], error) {
	return bind(t, src, opts)
}

// BindSpec binds the key template of a parsed tag: Bind with the tag's
// HashLong setting, and errors reported as a *TagError with the position in
// the tag (see Spec.KeyError). Options given here come after the tag's.
func BindSpec[R any](s *Spec, src Sources[R], opts ...BindOption) (*Key[R], error) {
	all := append([]BindOption{WithHashLong(s.HashLong)}, opts...)
	k, err := bind(s.Key, src, all)
	if err != nil {
		return nil, s.KeyError(err)
	}
	return k, nil
}

// BindKeys binds every key template of a parsed tag (Spec.Templates: the
// one of `key`, or each of `keys`), like BindSpec; an error's position
// points into the template concerned.
func BindKeys[R any](s *Spec, src Sources[R], opts ...BindOption) ([]*Key[R], error) {
	all := append([]BindOption{WithHashLong(s.HashLong)}, opts...)
	ts := s.Templates()
	keys := make([]*Key[R], len(ts))
	for i, t := range ts {
		k, err := bind(t, src, all)
		if err != nil {
			return nil, s.KeyErrorAt(i, err)
		}
		keys[i] = k
	}
	return keys, nil
}

func bind[R any](t *Template, src Sources[R], opts []BindOption) (*Key[R], error) {
	if t == nil {
		return nil, errors.New("keyexpr: Bind: nil template")
	}
	o, err := evaluateOptions(opts)
	if err != nil {
		return nil, err
	}
	k := &Key[R]{tmpl: t, getters: make([]Getter[R], len(t.phs)), opts: o}
	for i, ph := range t.phs {
		bind, ok := src[ph.Source]
		if !ok || bind == nil {
			return nil, t.errAt(ph, fmt.Errorf("%w %s (known sources: %s)", ErrUnknownSource, strconv.Quote(ph.Source), sourceNames(src)))
		}
		g, err := bind(ph.Path)
		if err == nil && g == nil {
			err = errors.New("source returned no getter")
		}
		if err != nil {
			return nil, t.errAt(ph, err)
		}
		k.getters[i] = g
	}
	return k, nil
}

// Template returns the template k was bound from.
func (k *Key[R]) Template() *Template { return k.tmpl }

// Eval evaluates the key for request r and returns the lock name: the
// template's literal text with each placeholder replaced by its escaped value.
// The name carries no prefix and no hash tag; the locker adds both.
//
// Every error Eval returns is a *TemplateError naming the placeholder and
// wrapping ErrMissingValue (the getter returned ""), ErrValueTooLong (the value
// is over the cap and hashing is off) or the getter's error. All of them mean
// the request cannot be served as sent: adapters answer HTTP 400 or gRPC
// InvalidArgument.
func (k *Key[R]) Eval(r R) (string, error) {
	var buf [128]byte
	b := buf[:0]
	t := k.tmpl
	for _, s := range t.segs {
		if s.ph < 0 {
			b = append(b, s.lit...)
			continue
		}
		v, err := k.getters[s.ph](r)
		switch {
		case err != nil:
			return "", t.errAt(t.phs[s.ph], err)
		case v == "":
			return "", t.errAt(t.phs[s.ph], ErrMissingValue)
		case len(v) > k.opts.maxValueLen:
			if !k.opts.hashLong {
				return "", t.errAt(t.phs[s.ph], fmt.Errorf("%w: %d bytes, the cap is %d", ErrValueTooLong, len(v), k.opts.maxValueLen))
			}
			b = appendHashed(b, v)
		default:
			b = appendEscaped(b, v, &t.esc)
		}
	}
	return string(b), nil
}

func (t *Template) errAt(ph Placeholder, err error) error {
	return &TemplateError{Template: t.src, Placeholder: ph.String(), Pos: ph.Pos, Err: err}
}

func sourceNames[R any](src Sources[R]) string {
	names := make([]string, 0, len(src))
	for name := range src {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// With returns a copy of s (which may be nil) in which name is bound to
// src, replacing any source of that name. Adapters use it to add the
// application's sources to their own.
func (s Sources[R]) With(name string, src Source[R]) Sources[R] {
	out := make(Sources[R], len(s)+1)
	maps.Copy(out, s)
	out[name] = src
	return out
}
