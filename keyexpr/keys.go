package keyexpr

import (
	"errors"
	"fmt"
)

// MaxKeys is the most key templates a `keys` field lists: a multi-key
// lock is for a handful of resources (a transfer's two accounts), and
// every key is one more lock taken while the others are held.
const MaxKeys = 16

// keyItem is one template of a `keys` list and its byte offset in the
// field's value.
type keyItem struct {
	text string
	off  int
}

// splitKeys splits a `keys` value into its templates: a comma separates
// two templates except inside a placeholder ({body.a,b} cannot occur, but
// a brace pair is skipped whole all the same) and spaces around a
// template are dropped. "{{" and "}}" are literal braces, as in Compile.
// A literal comma cannot be written in a `keys` template.
func splitKeys(v string) []keyItem {
	var items []keyItem
	start, depth := 0, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case depth == 0 && (c == '{' || c == '}') && i+1 < len(v) && v[i+1] == c:
			i++ // a literal brace
		case c == '{':
			depth++
		case c == '}' && depth > 0:
			depth--
		case c == ',' && depth == 0:
			items = append(items, trimItem(v[start:i], start))
			start = i + 1
		}
	}
	return append(items, trimItem(v[start:], start))
}

func trimItem(s string, off int) keyItem {
	for len(s) > 0 && s[0] == ' ' {
		s, off = s[1:], off+1
	}
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	return keyItem{text: s, off: off}
}

// itemError is an error about one template of a `keys` list: Pos in the
// TagError is computed from off (the template's offset in the value).
type itemError struct {
	index, off int
	err        error
}

func (e *itemError) Error() string { return e.err.Error() }
func (e *itemError) Unwrap() error { return e.err }

// setKeys compiles a `keys` value.
func (s *Spec) setKeys(value string) error {
	items := splitKeys(value)
	if len(items) > MaxKeys {
		return &itemError{index: MaxKeys, off: items[MaxKeys].off,
			err: fmt.Errorf("%w: %d key templates, at most %d", ErrBadValue, len(items), MaxKeys)}
	}
	s.Keys = make([]*Template, len(items))
	s.keysOffs = make([]int, len(items))
	for i, it := range items {
		if it.text == "" {
			return &itemError{index: i, off: it.off,
				err: fmt.Errorf("%w: key template %d of keys is empty", ErrMissingKey, i+1)}
		}
		t, err := Compile(it.text)
		if err != nil {
			return &itemError{index: i, off: it.off, err: err}
		}
		s.Keys[i], s.keysOffs[i] = t, it.off
	}
	return nil
}

// keysErrPos maps an error about the `keys` list into the tag: exact when
// the quoted value has no escapes, else the value's opening quote.
func (s *Spec) keysErrPos(err error) int {
	var ie *itemError
	if !s.keysExact || !errors.As(err, &ie) {
		return s.keysQuote
	}
	pos := s.keysQuote + 1 + ie.off
	var te *TemplateError
	if errors.As(ie.err, &te) {
		pos += te.Pos
	}
	return pos
}

// Templates returns the tag's key templates: the one of `key`, or those of
// `keys` in the order written. The slice is a copy.
func (s *Spec) Templates() []*Template {
	if s.Keys != nil {
		return append([]*Template(nil), s.Keys...)
	}
	return []*Template{s.Key}
}

// KeyErrorAt is KeyError for the i-th template of Templates: the position
// points into that template (inside `keys` for a multi-key tag).
func (s *Spec) KeyErrorAt(i int, err error) error {
	if s.Keys == nil {
		return s.KeyError(err)
	}
	pos := s.keysQuote
	var te *TemplateError
	if s.keysExact && i >= 0 && i < len(s.keysOffs) {
		pos += 1 + s.keysOffs[i]
		if errors.As(err, &te) {
			pos += te.Pos
		}
	}
	return &TagError{Tag: s.Tag, Field: "keys", Pos: pos, Err: err}
}
