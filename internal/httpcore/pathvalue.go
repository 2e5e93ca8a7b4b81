package httpcore

import (
	"errors"
	"net/url"
	"path"
	"slices"
	"strings"
)

// Path parameter values. A {path.X} placeholder must resolve to the same
// value for the same request on every adapter and under every router
// setting, and that value is the decoded one: the id the request names,
// which is what a lock taken by hand uses ("order:"+keyexpr.Escape(id)).
// Routers differ in what they hand over: the segment as sent, or decoded
// (and some decode a '+' into a space, as in a query string). The adapters
// turn what they get into the decoded value here.

// The request-time errors of path values (400, like every bad value).
var (
	// ErrPathEscape: a path parameter's value has a malformed %-escape.
	ErrPathEscape = errors.New("path parameter: malformed %-escape")
	// ErrPathAmbiguous: the router's value fits more than one spelling
	// of the request path that decode to different values.
	ErrPathAmbiguous = errors.New("path parameter: the value fits more than one decoding of the request path")
)

// UnescapePath decodes a path parameter value as sent: each %XX is the
// byte XX (either case of hex digits) and every other byte is itself — a
// '+' is a plus, not a space (RFC 3986; url.PathUnescape). A '%' that does
// not start a %XX escape is ErrPathEscape.
func UnescapePath(raw string) (string, error) {
	v, err := url.PathUnescape(raw)
	if err != nil {
		return "", ErrPathEscape
	}
	return v, nil
}

// Syntax is a router's route pattern language, for PathParam.
type Syntax uint8

const (
	// GinSyntax: ":name" runs to the next '/', "*name" is the rest of the
	// path from the '/' before it. The router may have matched the path
	// cleaned of extra slashes (RemoveExtraSlash).
	GinSyntax Syntax = iota + 1
	// EchoSyntax: ":name" runs to the next '/' (a last parameter to the end
	// of the path), "\\:" is a literal colon, '*' is the rest of the path.
	EchoSyntax
	// BraceSyntax: ServeMux, chi and gorilla/mux patterns — an optional
	// method and host, "{name}", "{name:regexp}", "{name...}" (the rest),
	// "{$}", and chi's trailing '*' (the rest, named "*").
	BraceSyntax
)

// PathParam returns the decoded value of the path parameter name of a
// request to u, routed on the route pattern, from v, the value the router
// handed over, and param, which reads the router's value of any
// parameter.
//
// A router matches either the decoded path (u.Path) or the path as sent
// (u.EscapedPath(): URL.RawPath when Go kept one), and hands over the
// values of the latter as sent, decoded, or decoded as query values (a '+'
// as a space). Which one a router did depends on its settings, which an
// adapter cannot always read, so PathParam asks the request: it matches
// pattern against both paths and keeps each reading that reproduces the
// values the router handed over, for every parameter of the pattern. A
// reading of the path as sent gives the decoded matched segment
// (UnescapePath); a reading of the decoded path gives v. When the
// readings agree (they always do unless the path is spelled to mislead
// one of them) that is the value; when they disagree, ErrPathAmbiguous.
// When none fits (a pattern this parser does not know), v is used as
// the router gave it.
//
// A path without '%' and '+' has one spelling, and v is returned at
// once.
func PathParam(s Syntax, u *url.URL, pattern, name, v string, param func(name string) string) (string, error) {
	if v == "" {
		return "", nil
	}
	raw := u.EscapedPath()
	if !strings.ContainsAny(raw, "%+") {
		return v, nil
	}
	parts := s.parse(pattern)
	at, vals := -1, []string{}
	for _, pt := range parts {
		if pt.param {
			if pt.name == name && at < 0 {
				at = len(vals)
			}
			vals = append(vals, param(pt.name))
		}
	}
	if at < 0 {
		return v, nil
	}
	var r readings
	for _, p := range s.candidates(raw) {
		m, ok := match(parts, p, s == BraceSyntax)
		if !ok || !sameValues(vals, m, asSent) {
			continue
		}
		r.add(UnescapePath(m[at]))
	}
	for _, p := range s.candidates(u.Path) {
		if m, ok := match(parts, p, s == BraceSyntax); ok && sameValues(vals, m, nil) {
			r.add(v, nil)
		}
	}
	return r.result(v)
}

// readings collects the values a path parameter can have.
type readings struct {
	vals []string
	errs int
}

func (r *readings) add(v string, err error) {
	switch {
	case err != nil:
		r.errs = 1
	case !slices.Contains(r.vals, v):
		r.vals = append(r.vals, v)
	}
}

// result is the one reading; fallback when there is none.
func (r *readings) result(fallback string) (string, error) {
	switch {
	case len(r.vals)+r.errs > 1:
		return "", ErrPathAmbiguous
	case r.errs == 1:
		return "", ErrPathEscape
	case len(r.vals) == 1:
		return r.vals[0], nil
	}
	return fallback, nil
}

// asSent lists the values a router can hand over for a segment matched
// in the path as sent: the segment itself, decoded, or decoded as a query
// value.
func asSent(seg string) []string {
	out := []string{seg}
	if d, err := url.PathUnescape(seg); err == nil && d != seg {
		out = append(out, d)
	}
	if d, err := url.QueryUnescape(seg); err == nil && d != seg {
		out = append(out, d)
	}
	return out
}

// sameValues reports whether the router's values are what the matched
// segments give, each through one of forms (nil: the segment itself).
func sameValues(vals, matched []string, forms func(string) []string) bool {
	if len(vals) != len(matched) {
		return false
	}
	for i, v := range vals {
		if forms == nil {
			if v != matched[i] {
				return false
			}
			continue
		}
		if !slices.Contains(forms(matched[i]), v) {
			return false
		}
	}
	return true
}

// candidates are the paths the router may have matched for p.
func (s Syntax) candidates(p string) []string {
	if s != GinSyntax {
		return []string{p}
	}
	if c := cleanSlashes(p); c != p {
		return []string{p, c}
	}
	return []string{p}
}

// cleanSlashes is Gin's cleanPath: path.Clean keeping a trailing slash.
func cleanSlashes(p string) string {
	if p == "" {
		return "/"
	}
	c := path.Clean(p)
	if c[0] != '/' {
		c = "/" + c
	}
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// part is a piece of a route pattern: literal text or a parameter.
type part struct {
	lit   string
	name  string
	param bool
	rest  bool // the parameter takes the rest of the path
	slash bool // the rest starts with the '/' before the parameter (Gin)
}

func (s Syntax) parse(pattern string) []part {
	switch s {
	case GinSyntax:
		return parseGin(pattern)
	case EchoSyntax:
		return parseEcho(pattern)
	case BraceSyntax:
		return parseBraces(pattern)
	}
	return nil
}

// builder accumulates literal text between parameters.
type builder struct {
	parts []part
	lit   strings.Builder
}

func (b *builder) flush() {
	if b.lit.Len() > 0 {
		b.parts = append(b.parts, part{lit: b.lit.String()})
		b.lit.Reset()
	}
}

func (b *builder) param(p part) {
	b.flush()
	p.param = true
	b.parts = append(b.parts, p)
}

func parseGin(pattern string) []part {
	var b builder
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case ':', '*':
			j := i + 1
			for j < len(pattern) && pattern[j] != '/' {
				j++
			}
			p := part{name: pattern[i+1 : j]}
			if c == '*' {
				lit := b.lit.String()
				if strings.HasSuffix(lit, "/") {
					b.lit.Reset()
					b.lit.WriteString(strings.TrimSuffix(lit, "/"))
					p.slash = true
				}
				p.rest = true
			}
			b.param(p)
			i = j - 1
		default:
			b.lit.WriteByte(c)
		}
	}
	b.flush()
	return b.parts
}

func parseEcho(pattern string) []part {
	var b builder
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '\\' && i+1 < len(pattern) && pattern[i+1] == ':':
			b.lit.WriteByte(':')
			i++
		case c == ':':
			j := i + 1
			for j < len(pattern) && pattern[j] != '/' && !(pattern[j] == '\\' && j+1 < len(pattern) && pattern[j+1] == ':') {
				j++
			}
			b.param(part{name: pattern[i+1 : j]})
			i = j - 1
		case c == '*':
			b.param(part{name: "*", rest: true})
			i = len(pattern) // Echo ignores what follows
		default:
			b.lit.WriteByte(c)
		}
	}
	b.flush()
	// A last parameter takes the rest of the path (Echo's router treats a
	// parameter leaf as it treats '*').
	if n := len(b.parts); n > 0 && b.parts[n-1].param {
		b.parts[n-1].rest = true
	}
	return b.parts
}

func parseBraces(pattern string) []part {
	if sp := strings.IndexByte(pattern, ' '); sp >= 0 && sp < strings.IndexByte(pattern, '/') {
		pattern = strings.TrimLeft(pattern[sp+1:], " \t") // "GET /x": the method
	}
	if sl := strings.IndexByte(pattern, '/'); sl > 0 {
		pattern = pattern[sl:] // "example.com/x": the host
	}
	var b builder
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '{':
			end := ClosingBrace(pattern, i)
			if end < 0 {
				b.lit.WriteString(pattern[i:])
				i = len(pattern)
				continue
			}
			name, _, _ := strings.Cut(pattern[i+1:end], ":")
			name = strings.TrimSpace(name)
			switch {
			case name == "$":
			case strings.HasSuffix(name, "..."):
				b.param(part{name: strings.TrimSuffix(name, "..."), rest: true})
			default:
				b.param(part{name: name})
			}
			i = end
		case c == '*' && i == len(pattern)-1:
			b.param(part{name: "*", rest: true})
		default:
			b.lit.WriteByte(c)
		}
	}
	b.flush()
	return b.parts
}

// match matches p against a parsed pattern and returns the parameters'
// values in order. A parameter that does not take the rest runs to the
// next '/', or, when literal text follows it in the same segment, to that
// text's first occurrence. prefix: a pattern that ends in '/' matches
// every path below it (ServeMux).
func match(parts []part, p string, prefix bool) ([]string, bool) {
	var vals []string
	i := 0
	for k, pt := range parts {
		if !pt.param {
			if !strings.HasPrefix(p[i:], pt.lit) {
				return nil, false
			}
			i += len(pt.lit)
			continue
		}
		if pt.rest {
			start := i
			if pt.slash {
				if i >= len(p) || p[i] != '/' {
					return nil, false
				}
			}
			vals = append(vals, p[start:])
			i = len(p)
			continue
		}
		seg := p[i:]
		if j := strings.IndexByte(seg, '/'); j >= 0 {
			seg = seg[:j]
		}
		if k+1 < len(parts) && !parts[k+1].param {
			next, _, _ := strings.Cut(parts[k+1].lit, "/")
			if next != "" {
				j := strings.Index(seg, next)
				if j < 0 {
					return nil, false
				}
				seg = seg[:j]
			}
		}
		vals = append(vals, seg)
		i += len(seg)
	}
	if i != len(p) {
		last := len(parts) - 1
		if !prefix || last < 0 || parts[last].param || !strings.HasSuffix(parts[last].lit, "/") {
			return nil, false
		}
	}
	return vals, true
}

// ClosingBrace returns the index of the '}' that closes the '{' at
// pattern[i], braces nested inside counted (a ServeMux or chi wildcard
// "{name:regexp}"), or -1 when it is not closed.
func ClosingBrace(pattern string, i int) int {
	depth := 0
	for j := i; j < len(pattern); j++ {
		switch pattern[j] {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return j
			}
		}
	}
	return -1
}
