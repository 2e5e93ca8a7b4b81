package httpcore

import (
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"

	"github.com/locktag/locktag/keyexpr"
)

// Reader is how an adapter reads a request of type R for the built-in key
// sources: a getter maker for each source that takes a name, and a getter
// for each that takes none.
type Reader[R any] struct {
	Path, Query, Form, Header func(name string) keyexpr.Getter[R]
	Body                      func(path string) keyexpr.Getter[R]
	Method, Route, IP         keyexpr.Getter[R]
}

// Builtins returns the built-in sources (path, query, form, header, body,
// method, route, ip) read through rd, with app's on top: an application
// source replaces a built-in of its name.
func Builtins[R any](rd Reader[R], app keyexpr.Sources[R]) keyexpr.Sources[R] {
	s := keyexpr.Sources[R]{
		"path":   Named("path", rd.Path),
		"query":  Named("query", rd.Query),
		"form":   Named("form", rd.Form),
		"header": Named("header", rd.Header),
		"body":   Named("body", rd.Body),
		"method": Bare("method", rd.Method),
		"route":  Bare("route", rd.Route),
		"ip":     Bare("ip", rd.IP),
	}
	for name, src := range app {
		s[name] = src
	}
	return s
}

// ContextKeys is the adapters' source of values an earlier middleware
// stored in the request's context (GinKeys, ContextKeys, Locals): get
// reads one by key, and StringOf writes it. With allowed keys given, any
// other key is an error when the source is bound; with none, every key is
// accepted. source and key name the store in errors ("a gin key source
// needs a key name", "gin key "x" is not one of the allowed keys").
func ContextKeys[R any](source, key string, get func(r R, key string) any, allowed []string) keyexpr.Source[R] {
	allowed = slices.Clone(allowed)
	return func(path string) (keyexpr.Getter[R], error) {
		if path == "" {
			return nil, fmt.Errorf("a %s source needs a key name, e.g. {ctx.user}", source)
		}
		if len(allowed) > 0 && !slices.Contains(allowed, path) {
			return nil, fmt.Errorf("%s %q is not one of the allowed keys %q", key, path, allowed)
		}
		return func(r R) (string, error) { return StringOf(get(r, path)), nil }, nil
	}
}

// StringOf writes a stored value as a key value: nil as "" (a missing
// value), strings and []byte as they are, integers and booleans in
// decimal / "true" / "false", fmt.Stringer values through String, and
// anything else through fmt.Sprint.
func StringOf(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case uint:
		return strconv.FormatUint(uint64(x), 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case uint32:
		return strconv.FormatUint(uint64(x), 10)
	case bool:
		return strconv.FormatBool(x)
	case fmt.Stringer:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}

// Named makes a source that needs a path ({path.id}), built by mk.
func Named[R any](source string, mk func(path string) keyexpr.Getter[R]) keyexpr.Source[R] {
	return func(path string) (keyexpr.Getter[R], error) {
		if path == "" {
			return nil, fmt.Errorf("source %s needs a name: write {%s.NAME}", source, source)
		}
		return mk(path), nil
	}
}

// Bare makes a source that takes no path ({method}).
func Bare[R any](source string, g keyexpr.Getter[R]) keyexpr.Source[R] {
	return func(path string) (keyexpr.Getter[R], error) {
		if path != "" {
			return nil, fmt.Errorf("source %s takes no name: write {%s}", source, source)
		}
		return g, nil
	}
}

// SourceFunc is the adapters' SourceFunc: a source without a path.
func SourceFunc[R any](get func(R) (string, error)) keyexpr.Source[R] {
	return func(path string) (keyexpr.Getter[R], error) {
		if path != "" {
			return nil, fmt.Errorf("this source takes no path (got %q)", path)
		}
		return get, nil
	}
}

// Header reads the first value of a header of the request req returns.
// The name is canonicalised once, here, so a request costs one map lookup.
func Header[R any](name string, req func(R) *http.Request) keyexpr.Getter[R] {
	key := textproto.CanonicalMIMEHeaderKey(name)
	if key == "Host" {
		return func(r R) (string, error) { return req(r).Host, nil }
	}
	return func(r R) (string, error) {
		if vs := req(r).Header[key]; len(vs) > 0 {
			return vs[0], nil
		}
		return "", nil
	}
}
