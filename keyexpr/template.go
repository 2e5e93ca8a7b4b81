package keyexpr

import (
	"strconv"
	"strings"
)

// Placeholder is one {source.path} or {source} reference in a template.
type Placeholder struct {
	Source string // e.g. "path", "header", "req", "ctx"
	Path   string // e.g. "id", "X-User-Id", "item.sku"; "" for bare sources like {method}
	Pos    int    // byte offset of the '{' in the template
}

// String returns the placeholder as written in the template, e.g. "{path.id}".
func (p Placeholder) String() string {
	if p.Path == "" {
		return "{" + p.Source + "}"
	}
	return "{" + p.Source + "." + p.Path + "}"
}

// Template is a compiled key template: literal text and placeholders. It is
// immutable and safe for concurrent use. Bind it to a transport's sources to
// evaluate it.
type Template struct {
	src   string
	segs  []segment     // literal and placeholder segments, in order
	phs   []Placeholder // the placeholders, in order
	extra []byte        // separator bytes escaped in values on top of the fixed set
	esc   escapeTable   // bytes a value must not contain verbatim (see escape.go)
}

// segment is either a literal (ph < 0) or a reference to phs[ph].
type segment struct {
	lit string
	ph  int
}

// String returns the template's source text.
func (t *Template) String() string { return t.src }

// Placeholders returns the template's placeholders in order of appearance. The
// slice is a copy; changing it does not change t.
func (t *Template) Placeholders() []Placeholder {
	return append([]Placeholder(nil), t.phs...)
}

// Compile parses a key template: literal text with {source.path} and {source}
// placeholders, where "{{" and "}}" stand for literal braces.
//
// The source is a lower-case identifier ([a-z][a-z0-9_]*); the path is
// everything after the first '.', must be non-empty, must not contain braces
// and must not have empty dot-separated segments ("a..b", "a."). Two
// placeholders must be separated by literal text, and that text must start with
// an ASCII byte that is not a letter, a digit or '%' (for example ':', '-',
// '/', '.'); that byte is then escaped in every value, which keeps the key
// injective (see the package documentation).
//
// Errors are *TemplateError values wrapping ErrSyntax.
func Compile(tmpl string) (*Template, error) {
	t := &Template{src: tmpl}
	if tmpl == "" {
		return nil, &TemplateError{Template: tmpl, Err: syntaxf("empty template")}
	}
	var lit strings.Builder
	litStart := 0 // position where the pending literal started
	flush := func() {
		if lit.Len() > 0 {
			t.segs = append(t.segs, segment{lit: lit.String(), ph: -1})
			lit.Reset()
		}
	}
	for i := 0; i < len(tmpl); {
		c := tmpl[i]
		switch {
		case c == '{' && i+1 < len(tmpl) && tmpl[i+1] == '{':
			if lit.Len() == 0 {
				litStart = i
			}
			lit.WriteByte('{')
			i += 2
		case c == '}' && i+1 < len(tmpl) && tmpl[i+1] == '}':
			if lit.Len() == 0 {
				litStart = i
			}
			lit.WriteByte('}')
			i += 2
		case c == '}':
			return nil, &TemplateError{Template: tmpl, Pos: i, Err: syntaxf("unmatched '}' (write \"}}\" for a literal brace)")}
		case c == '{':
			ph, end, err := parsePlaceholder(tmpl, i)
			if err != nil {
				return nil, err
			}
			if n := len(t.segs); lit.Len() == 0 && n > 0 && t.segs[n-1].ph >= 0 {
				return nil, &TemplateError{Template: tmpl, Placeholder: ph.String(), Pos: i,
					Err: syntaxf("adjacent placeholders: separate them with literal text such as ':'")}
			}
			if lit.Len() > 0 && len(t.phs) > 0 {
				// A literal between two placeholders: its first byte ends the
				// preceding value, so it must be a byte values can never contain.
				sep := lit.String()[0]
				if !separatorOK(sep) {
					return nil, &TemplateError{Template: tmpl, Pos: litStart,
						Err: syntaxf("text between placeholders must start with a separator such as ':', '-', '/' or '.' (not a letter, digit, '%' or non-ASCII byte)")}
				}
				t.addSeparator(sep)
			}
			flush()
			t.segs = append(t.segs, segment{ph: len(t.phs)})
			t.phs = append(t.phs, ph)
			i = end
		default:
			if lit.Len() == 0 {
				litStart = i
			}
			lit.WriteByte(c)
			i++
		}
	}
	flush()
	t.esc = newEscapeTable(t.extra)
	return t, nil
}

// parsePlaceholder parses the placeholder whose '{' is at tmpl[pos]. It
// returns the placeholder and the offset just past its '}'.
func parsePlaceholder(tmpl string, pos int) (Placeholder, int, error) {
	fail := func(text, detail string, at int) (Placeholder, int, error) {
		return Placeholder{}, 0, &TemplateError{Template: tmpl, Placeholder: text, Pos: at, Err: syntaxf(detail)}
	}
	end := -1
	for j := pos + 1; j < len(tmpl); j++ {
		if tmpl[j] == '}' {
			end = j
			break
		}
		if tmpl[j] == '{' {
			return fail("", "'{' inside a placeholder (write \"{{\" for a literal brace)", j)
		}
	}
	if end < 0 {
		return fail("", "unmatched '{' (write \"{{\" for a literal brace)", pos)
	}
	text := tmpl[pos : end+1]
	body := tmpl[pos+1 : end]
	if body == "" {
		return fail(text, "empty placeholder", pos)
	}
	src, path, hasPath := strings.Cut(body, ".")
	if src == "" {
		return fail(text, "empty source name", pos)
	}
	if !validSource(src) {
		return fail(text, "bad source name "+strconv.Quote(src)+" (want [a-z][a-z0-9_]*)", pos)
	}
	if hasPath {
		if path == "" {
			return fail(text, "empty path after "+strconv.Quote(src+"."), pos)
		}
		for seg := range strings.SplitSeq(path, ".") {
			if seg == "" {
				return fail(text, "empty segment in path "+strconv.Quote(path), pos)
			}
		}
	}
	return Placeholder{Source: src, Path: path, Pos: pos}, end + 1, nil
}

// validSource reports whether s matches [a-z][a-z0-9_]*.
func validSource(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// separatorOK reports whether c may start the literal between two placeholders:
// an ASCII byte that is not a letter, a digit or '%'. Letters and digits would
// have to be escaped in every value; '%' starts escape sequences.
func separatorOK(c byte) bool {
	return c < 0x80 && c != '%' &&
		!('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9')
}

func (t *Template) addSeparator(c byte) {
	if strings.IndexByte(string(t.extra), c) < 0 {
		t.extra = append(t.extra, c)
	}
}
