package stdhttp

import (
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/middleware/stdhttp/internal/httpcore"
)

type getter = keyexpr.Getter[*http.Request]

func self(r *http.Request) *http.Request { return r }

// sources returns the built-in sources with the application's on top.
func (m *Lock) sources() keyexpr.Sources[*http.Request] {
	return httpcore.Builtins(httpcore.Reader[*http.Request]{
		Path: m.pathGetter,
		Query: func(n string) getter {
			return func(r *http.Request) (string, error) { return r.URL.Query().Get(n), nil }
		},
		Form:   func(n string) getter { return func(r *http.Request) (string, error) { return r.PostFormValue(n), nil } },
		Header: func(n string) getter { return httpcore.Header(n, self) },
		Body:   m.bodyGetter,
		Method: func(r *http.Request) (string, error) { return r.Method, nil },
		Route:  func(r *http.Request) (string, error) { return m.s.Route(r), nil },
		IP:     clientIP,
	}, m.s.Sources)
}

// pathGetter reads a path parameter, decoded: the value every locktag
// adapter gives for the request. ServeMux hands over decoded values; chi
// (r.PathValue, chi.URLParam) hands over the segment as sent when Go kept
// URL.RawPath (x%2Fy), and gorilla/mux with UseEncodedPath always does.
// httpcore.PathParam tells from the request path and the route pattern
// (WithRoute; r.Pattern) how the router read it; without a pattern the
// value is used as the router gives it. An empty value on a route whose
// pattern lacks the parameter is a mistake in the tag (ErrNoRouteParam, a
// 500), not in the request. Without a pattern it cannot be told apart
// from an empty value the client sent, and is a 400.
func (m *Lock) pathGetter(name string) getter {
	get, route := m.s.PathValue, m.s.Route
	return func(r *http.Request) (string, error) {
		v := get(r, name)
		p := route(r)
		if v == "" {
			if p != "" && !hasWildcard(p, name) {
				return "", ErrNoRouteParam
			}
			return "", nil
		}
		return httpcore.PathParam(httpcore.BraceSyntax, r.URL, p, name, v, func(n string) string { return get(r, n) })
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

// wildcards returns the parameter names of a route pattern: ServeMux's
// {name} and {name...} ("POST example.com/orders/{id}/files/{path...}"
// has id and path), chi's and gorilla/mux's {name:regexp} (braces inside
// the regexp nest), and chi's trailing catch-all "*", named "*".
func wildcards(pattern string) []string {
	names := []string{}
	for i := 0; i < len(pattern); i++ {
		if pattern[i] != '{' {
			continue
		}
		end := httpcore.ClosingBrace(pattern, i)
		if end < 0 {
			break
		}
		name, _, _ := strings.Cut(pattern[i+1:end], ":")
		if name = strings.TrimSuffix(strings.TrimSpace(name), "..."); name != "$" && name != "" {
			names = append(names, name)
		}
		i = end
	}
	if strings.HasSuffix(pattern, "/*") || pattern == "*" {
		names = append(names, "*")
	}
	return names
}

func hasWildcard(pattern, name string) bool {
	return slices.Contains(wildcards(pattern), name)
}

// SourceFunc returns a source without a path, for WithSource: get runs
// once per request, and a template that gives it a path is a registration
// error.
func SourceFunc(get func(r *http.Request) (string, error)) keyexpr.Source[*http.Request] {
	return httpcore.SourceFunc(get)
}
