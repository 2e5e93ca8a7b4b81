package keyexpr

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel errors. Every error this package returns wraps exactly one of them
// (or, from Key.Eval, the error a Getter returned), so callers can branch with
// errors.Is. The details — the tag or template, the field or placeholder and the
// byte position — travel in a *TagError or a *TemplateError.
var (
	// ErrSyntax reports malformed tag or template text: bad quoting, a missing
	// ':' or space, an unmatched brace, an empty or malformed placeholder,
	// adjacent placeholders, or a literal between placeholders that does not
	// start with a separator character.
	ErrSyntax = errors.New("keyexpr: syntax error")
	// ErrUnknownField reports a tag field other than key, keys, expire, wait,
	// name, long, limit, keep, mode, rate and burst.
	ErrUnknownField = errors.New("keyexpr: unknown field")
	// ErrDuplicateField reports a tag field given twice.
	ErrDuplicateField = errors.New("keyexpr: duplicate field")
	// ErrBadDuration reports an expire or wait value that time.ParseDuration
	// rejects, a negative one, or an expire below one millisecond.
	ErrBadDuration = errors.New("keyexpr: bad duration")
	// ErrBadValue reports a tag field whose value is not one of the allowed
	// values: long other than "hash" or "reject", an empty name, a malformed
	// limit, mode, rate or burst, or two fields that cannot go together.
	ErrBadValue = errors.New("keyexpr: bad value")
	// ErrMissingKey reports a tag with neither a key nor a keys field, an
	// empty one, or an empty template in a keys list ("a,,b", "a,").
	ErrMissingKey = errors.New("keyexpr: missing key")
	// ErrUnknownSource reports, from Bind, a placeholder whose source is not in
	// the Sources given.
	ErrUnknownSource = errors.New("keyexpr: unknown source")
	// ErrMissingValue reports, from Key.Eval, a placeholder whose value is the
	// empty string. A lock is never taken on a shorter key.
	ErrMissingValue = errors.New("keyexpr: missing value")
	// ErrValueTooLong reports, from Key.Eval, a value longer than the cap set by
	// WithMaxValueLen when hashing of long values is off.
	ErrValueTooLong = errors.New("keyexpr: value too long")
)

// TagError describes a problem with a lock tag. It is returned by ParseTag and
// is the panic value of MustParseTag.
type TagError struct {
	Tag   string // the tag text as given
	Field string // the field concerned, "" if the error is outside any field
	Pos   int    // byte offset in Tag where the problem was found
	Err   error  // wraps one of the sentinel errors (for key: a *TemplateError)
}

// Error returns "keyexpr: tag `<tag>`: field <field> at byte <pos>: <detail>".
func (e *TagError) Error() string {
	var b strings.Builder
	b.WriteString("keyexpr: tag ")
	b.WriteString(quoteTag(e.Tag))
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString("field ")
		b.WriteString(e.Field)
		b.WriteString(" ")
	}
	b.WriteString("at byte ")
	b.WriteString(strconv.Itoa(e.Pos))
	b.WriteString(": ")
	b.WriteString(trimPrefix(e.Err))
	return b.String()
}

// Unwrap returns e.Err.
func (e *TagError) Unwrap() error { return e.Err }

// TemplateError describes a problem with a key template: a syntax error from
// Compile, a binding error from Bind, or a request-time error from Key.Eval.
type TemplateError struct {
	Template    string // the template source text
	Placeholder string // the placeholder concerned, e.g. "{path.id}"; "" if none
	Pos         int    // byte offset in Template where the problem was found
	Err         error  // wraps a sentinel error or the error a Source or Getter returned
}

// Error returns `keyexpr: template "<template>": placeholder <ph> at byte
// <pos>: <detail>`.
func (e *TemplateError) Error() string {
	var b strings.Builder
	b.WriteString("keyexpr: template ")
	b.WriteString(strconv.Quote(e.Template))
	b.WriteString(": ")
	if e.Placeholder != "" {
		b.WriteString("placeholder ")
		b.WriteString(e.Placeholder)
		b.WriteString(" ")
	}
	b.WriteString("at byte ")
	b.WriteString(strconv.Itoa(e.Pos))
	b.WriteString(": ")
	b.WriteString(trimPrefix(e.Err))
	return b.String()
}

// Unwrap returns e.Err.
func (e *TemplateError) Unwrap() error { return e.Err }

// trimPrefix returns err's message without the package prefix, so nested
// messages read "keyexpr: tag ...: bad duration: ..." rather than repeating it.
func trimPrefix(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.TrimPrefix(err.Error(), "keyexpr: ")
}

// quoteTag shows a tag the way it is usually written: in back quotes.
func quoteTag(tag string) string {
	if strconv.CanBackquote(tag) {
		return "`" + tag + "`"
	}
	return strconv.Quote(tag)
}

// syntaxf returns an error wrapping ErrSyntax with a detail message.
func syntaxf(detail string) error { return &detailError{ErrSyntax, detail} }

// detailError is a sentinel plus a detail: "keyexpr: syntax error: empty path".
type detailError struct {
	sentinel error
	detail   string
}

func (e *detailError) Error() string { return e.sentinel.Error() + ": " + e.detail }
func (e *detailError) Unwrap() error { return e.sentinel }
