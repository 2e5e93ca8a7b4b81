package httprecord

import (
	"mime"
	"strings"
)

// Canonical returns the parts of an HTTP request's Fingerprint2
// (guard.Request.Canonical): the method, the route, CanonicalPath of the
// path, the query as sent, and the representation headers that change
// what the body means, Content-Type (CanonicalMediaType) and
// Content-Encoding (CanonicalEncoding). Every HTTP adapter builds its
// requests' parts here, so the same request has the same fingerprint on
// each of them.
func Canonical(method, route, path, query string, contentType, contentEncoding []string) []string {
	return []string{method, route, CanonicalPath(path), query,
		CanonicalMediaType(strings.Join(contentType, ",")), CanonicalEncoding(strings.Join(contentEncoding, ","))}
}

// CanonicalPath returns path (as sent, escaped or not) in the normal form
// of RFC 3986 section 6.2.2: an escape of an unreserved character is
// decoded, every other escape is upper-cased, a byte that may not appear
// in a path is escaped, and a '%' that begins no escape is escaped. So
// "/k/%e6%97%a5", "/k/%E6%97%A5" and the raw bytes of "/k/日本" are one
// path; "/k/x%2Fy" and "/k/x/y" stay two.
func CanonicalPath(path string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(path))
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c == '%' && i+2 < len(path) && isHex(path[i+1]) && isHex(path[i+2]) {
			d := unhex(path[i+1])<<4 | unhex(path[i+2])
			if unreserved(d) {
				b.WriteByte(d)
			} else {
				b.WriteByte('%')
				b.WriteByte(hex[d>>4])
				b.WriteByte(hex[d&15])
			}
			i += 2
			continue
		}
		if c != '%' && (unreserved(c) || strings.IndexByte("!$&'()*+,;=:@/", c) >= 0) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// CanonicalMediaType returns a Content-Type value in normal form: type,
// subtype and parameter names in lower case, parameters sorted, the
// charset's value in lower case. A value that does not parse is trimmed
// and lower-cased.
func CanonicalMediaType(v string) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return ""
	}
	t, params, err := mime.ParseMediaType(v)
	if err != nil {
		return strings.ToLower(v)
	}
	if cs, ok := params["charset"]; ok {
		params["charset"] = strings.ToLower(cs)
	}
	if s := mime.FormatMediaType(t, params); s != "" {
		return s
	}
	return strings.ToLower(v)
}

// CanonicalEncoding returns a Content-Encoding value in normal form: the
// codings in order, in lower case, without spaces and without "identity".
func CanonicalEncoding(v string) string {
	var out []string
	for c := range strings.SplitSeq(v, ",") {
		c = strings.ToLower(strings.TrimSpace(c))
		if c != "" && c != "identity" {
			out = append(out, c)
		}
	}
	return strings.Join(out, ",")
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
