package stdhttp

import (
	"net"
	"net/http"
	"strings"

	"github.com/locktag/locktag/internal/httpcore"
	"github.com/locktag/locktag/keyexpr"
)

type getter = keyexpr.Getter[*http.Request]

func self(r *http.Request) *http.Request { return r }

// sources returns the built-in sources with the application's on top.
func (m *Lock) sources() keyexpr.Sources[*http.Request] {
	s := keyexpr.Sources[*http.Request]{
		"path": httpcore.Named("path", m.pathGetter),
		"query": httpcore.Named("query", func(n string) getter {
			return func(r *http.Request) (string, error) { return r.URL.Query().Get(n), nil }
		}),
		"form":   httpcore.Named("form", func(n string) getter { return func(r *http.Request) (string, error) { return r.PostFormValue(n), nil } }),
		"header": httpcore.Named("header", func(n string) getter { return httpcore.Header(n, self) }),
		"body":   httpcore.Named("body", m.bodyGetter),
		"method": httpcore.Bare("method", func(r *http.Request) (string, error) { return r.Method, nil }),
		"route":  httpcore.Bare("route", func(r *http.Request) (string, error) { return m.s.Route(r), nil }),
		"ip":     httpcore.Bare("ip", clientIP),
	}
	for name, src := range m.s.Sources {
		s[name] = src
	}
	return s
}

// pathGetter reads a path parameter. With ServeMux, an empty value on a
// pattern without the wildcard is a mistake in the tag (ErrNoRouteParam, a
// 500), not in the request.
func (m *Lock) pathGetter(name string) getter {
	get, custom := m.s.PathValue, m.custom
	return func(r *http.Request) (string, error) {
		v := get(r, name)
		if v == "" && !custom && r.Pattern != "" && !hasWildcard(r.Pattern, name) {
			return "", ErrNoRouteParam
		}
		return v, nil
	}
}

// bodyGetter serves {body.a.b}, parsed once per request.
func (m *Lock) bodyGetter(path string) getter {
	segs := httpcore.Segments(path)
	return func(r *http.Request) (string, error) {
		return httpcore.ParseBody(r, m.maxBody).Field(segs, m.maxBody)
	}
}

// clientIP is the host of r.RemoteAddr: the peer, not a forwarded-for
// header, which a client can forge. Behind a proxy, replace it with
// WithSource("ip", ...).
func clientIP(r *http.Request) (string, error) {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host, nil
	}
	return r.RemoteAddr, nil
}

// wildcards returns the wildcard names of a ServeMux pattern
// ("POST example.com/orders/{id}/files/{path...}" has id and path).
func wildcards(pattern string) []string {
	names := []string{}
	for rest := pattern; ; {
		i := strings.IndexByte(rest, '{')
		j := strings.IndexByte(rest, '}')
		if i < 0 || j < i {
			return names
		}
		if name := strings.TrimSuffix(rest[i+1:j], "..."); name != "$" && name != "" {
			names = append(names, name)
		}
		rest = rest[j+1:]
	}
}

func hasWildcard(pattern, name string) bool {
	for _, w := range wildcards(pattern) {
		if w == name {
			return true
		}
	}
	return false
}
