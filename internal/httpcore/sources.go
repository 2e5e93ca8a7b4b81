package httpcore

import (
	"fmt"
	"net/http"
	"net/textproto"

	"github.com/locktag/locktag/keyexpr"
)

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
