package keyexpr

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Spec is a parsed lock tag.
type Spec struct {
	Tag      string        // the tag text as given
	Key      *Template     // compiled key template (field `key`); nil for a multi-key tag
	Keys     []*Template   // field `keys`: the templates of a multi-key lock, in the order written; nil for `key`
	Expire   time.Duration // field `expire`; 0 = not set (watchdog mode)
	Wait     time.Duration // field `wait`; 0 = fail at once
	Name     string        // field `name`; "" = adapter default (route / full method)
	HashLong bool          // field `long:"hash"` (hash over-long values with SHA-256); `long:"reject"` or absent = reject
	Limit    int           // field `limit`: a semaphore of Limit permits; 0 = absent (a mutex)
	Keep     time.Duration // field `keep`: hold the lock this long after a successful call; 0 = release at once
	Mode     string        // field `mode`: "read" or "write" (a read/write lock); "" = a mutex
	Rate     Rate          // fields `rate` and `burst`: a rate limit, which takes no lock; the zero Rate = absent

	keyQuote int  // offset of the key value's opening quote in Tag
	keyExact bool // the quoted key value has no escapes: offsets inside it match the template's

	keysQuote int   // offset of the keys value's opening quote in Tag
	keysExact bool  // as keyExact, for keys
	keysOffs  []int // offset of each Keys template in the unquoted keys value
}

// ParseTag parses a lock tag such as
//
//	key:"order:{path.id}" expire:"30s" wait:"2s"
//
// The syntax is a Go struct tag's, but strict: malformed quoting, a missing
// space between pairs, unknown and duplicate fields are errors. The fields
// (key or keys, expire, wait, name, long, limit, keep, mode, rate, burst)
// and what combines with what are in docs/tags.md. Errors are *TagError
// values naming the field and byte position and wrapping one of this
// package's sentinels; a bad key template wraps a *TemplateError.
func ParseTag(tag string) (*Spec, error) {
	s := &Spec{Tag: tag}
	seen := make(map[string]bool, 8)
	// Where keep, limit and mode start: a conflict is told at the later.
	kindPos := map[string]int{}
	fail := func(field string, pos int, err error) (*Spec, error) {
		return nil, &TagError{Tag: tag, Field: field, Pos: pos, Err: err}
	}
	for pos := 0; ; {
		start := pos
		for pos < len(tag) && tag[pos] == ' ' {
			pos++
		}
		if pos == len(tag) {
			break
		}
		if pos == start && pos > 0 {
			return fail("", pos, syntaxf("missing space between fields"))
		}
		// Field name: as in reflect.StructTag, anything up to ':' that is not a
		// space, a quote or a control character.
		nameStart := pos
		for pos < len(tag) && tag[pos] > ' ' && tag[pos] != ':' && tag[pos] != '"' && tag[pos] != 0x7f {
			pos++
		}
		name := tag[nameStart:pos]
		if name == "" {
			return fail("", pos, syntaxf("expected a field name"))
		}
		if pos == len(tag) || tag[pos] != ':' {
			return fail(name, pos, syntaxf("expected ':' after field name"))
		}
		pos++
		if pos == len(tag) || tag[pos] != '"' {
			return fail(name, pos, syntaxf("expected '\"' after ':'"))
		}
		valStart := pos
		for pos++; pos < len(tag) && tag[pos] != '"'; pos++ {
			if tag[pos] == '\\' {
				pos++
			}
		}
		if pos >= len(tag) {
			return fail(name, valStart, syntaxf("unterminated quoted value"))
		}
		pos++
		quoted := tag[valStart:pos]
		value, err := strconv.Unquote(quoted)
		if err != nil {
			return fail(name, valStart, syntaxf("malformed quoted value "+quoted))
		}
		if seen[name] {
			return fail(name, nameStart, fmt.Errorf("%w %q: each field may appear once", ErrDuplicateField, name))
		}
		seen[name] = true
		if name == "key" {
			s.keyQuote, s.keyExact = valStart, quoted[1:len(quoted)-1] == value
		}
		if name == "keys" {
			s.keysQuote, s.keysExact = valStart, quoted[1:len(quoted)-1] == value
		}
		switch name {
		case "keep", "limit", "mode", "key", "keys", "expire", "rate", "burst":
			kindPos[name] = nameStart
		}
		if err := s.setField(name, value); err != nil {
			errPos := valStart
			if name == "key" {
				errPos = s.keyErrPos(err)
			}
			if name == "keys" {
				errPos = s.keysErrPos(err)
				var ie *itemError
				if errors.As(err, &ie) {
					err = ie.err
				}
			}
			if errors.Is(err, ErrUnknownField) {
				errPos = nameStart
			}
			return fail(name, errPos, err)
		}
	}
	if s.Key == nil && s.Keys == nil {
		return fail("key", 0, ErrMissingKey)
	}
	if a, b, err := s.conflict(); err != nil {
		if kindPos[a] > kindPos[b] {
			b = a
		}
		return fail(b, kindPos[b], err)
	}
	s.defaults()
	return s, nil
}

// defaults fills in what an absent field means, once the fields agree.
func (s *Spec) defaults() {
	if s.Rate.N > 0 && s.Rate.Burst == 0 {
		s.Rate.Burst = s.Rate.N
	}
}

// conflict reports two fields a and b that cannot go together; the
// caller reports it at the later of them.
func (s *Spec) conflict() (a, b string, err error) {
	switch {
	case s.Key != nil && s.Keys != nil:
		return "key", "keys", fmt.Errorf("%w: key with keys: a tag names one key or a list of keys, not both", ErrBadValue)
	case s.Keys != nil && s.Limit > 0:
		return "keys", "limit", fmt.Errorf("%w: keys with limit: a multi-key lock is a set of mutexes, not a concurrency limit", ErrBadValue)
	case s.Keys != nil && s.Mode != "":
		return "keys", "mode", fmt.Errorf("%w: keys with mode: a multi-key lock is a set of mutexes, not a read/write lock", ErrBadValue)
	case s.Keep > 0 && s.Limit > 0:
		return "keep", "limit", fmt.Errorf("%w: keep with limit: a concurrency limit's permits cannot be kept after the call", ErrBadValue)
	case s.Mode != "" && s.Limit > 0:
		return "mode", "limit", fmt.Errorf("%w: mode with limit: a lock is a read/write lock or a concurrency limit, not both", ErrBadValue)
	case s.Mode != "" && s.Keep > 0:
		return "mode", "keep", fmt.Errorf("%w: mode with keep: a read/write lock cannot be kept after the call", ErrBadValue)
	}
	// Before defaults: Rate.Burst is the burst field's value, 0 if absent.
	return s.rateConflict(s.Rate.Burst)
}

// MustParseTag is like ParseTag but panics, with the *TagError ParseTag would
// return, if the tag cannot be parsed. It is meant for tags written in code at
// registration time.
func MustParseTag(tag string) *Spec {
	s, err := ParseTag(tag)
	if err != nil {
		panic(err)
	}
	return s
}

// MaxLimit is the largest limit a tag accepts: a semaphore's permits are
// a sorted set in Redis, and a limit beyond this is a mistake.
const MaxLimit = 1 << 20

// setField stores one field's unquoted value.
func (s *Spec) setField(name, value string) error {
	switch name {
	case "key":
		if value == "" {
			return ErrMissingKey
		}
		t, err := Compile(value)
		if err != nil {
			return err
		}
		s.Key = t
	case "keys":
		if value == "" {
			return fmt.Errorf("%w: empty keys", ErrMissingKey)
		}
		return s.setKeys(value)
	case "expire":
		d, err := parseDuration(value)
		if err != nil {
			return err
		}
		if d < time.Millisecond {
			return fmt.Errorf("%w: %q: must be at least 1ms; omit expire for watchdog mode", ErrBadDuration, value)
		}
		s.Expire = d
	case "wait":
		d, err := parseDuration(value)
		if err != nil {
			return err
		}
		s.Wait = d
	case "name":
		if value == "" {
			return fmt.Errorf("%w: empty name; omit name for the adapter's default", ErrBadValue)
		}
		s.Name = value
	case "long":
		switch value {
		case "hash":
			s.HashLong = true
		case "reject":
			s.HashLong = false
		default:
			return fmt.Errorf("%w: long %q: want \"hash\" or \"reject\"", ErrBadValue, value)
		}
	case "keep":
		d, err := parseDuration(value)
		if err != nil {
			return err
		}
		if d < time.Millisecond {
			return fmt.Errorf("%w: %q: must be at least 1ms; omit keep to release at once", ErrBadDuration, value)
		}
		s.Keep = d
	case "mode":
		if value != "read" && value != "write" {
			return fmt.Errorf("%w: mode %q: want \"read\" or \"write\"", ErrBadValue, value)
		}
		s.Mode = value
	case "limit":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 || n > MaxLimit || value != strconv.Itoa(n) {
			return fmt.Errorf("%w: limit %q: want a whole number of permits from 1 to %d", ErrBadValue, value, MaxLimit)
		}
		s.Limit = n
	case "rate":
		r, err := parseRate(value)
		if err != nil {
			return err
		}
		s.Rate.N, s.Rate.Period = r.N, r.Period
	case "burst":
		n, err := parseBurst(value)
		if err != nil {
			return err
		}
		s.Rate.Burst = n
	default:
		return fmt.Errorf("%w %q (known: key, keys, expire, wait, name, long, limit, keep, mode, rate, burst)", ErrUnknownField, name)
	}
	return nil
}

func parseDuration(value string) (time.Duration, error) {
	d, err := time.ParseDuration(value)
	if err != nil {
		return 0, fmt.Errorf("%w: %q: want a Go duration such as \"30s\" or \"1m30s\"", ErrBadDuration, value)
	}
	if d < 0 {
		return 0, fmt.Errorf("%w: %q: must not be negative", ErrBadDuration, value)
	}
	return d, nil
}

// keyErrPos maps a template error's position into the tag. That is exact when
// unquoting left the value unchanged (no escape sequences, valid UTF-8);
// otherwise the error points at the value's opening quote.
func (s *Spec) keyErrPos(err error) int {
	var te *TemplateError
	if errors.As(err, &te) && s.keyExact {
		return s.keyQuote + 1 + te.Pos
	}
	return s.keyQuote
}

// KeyError wraps an error about the spec's key template — typically from
// Bind, at registration — in a *TagError that quotes the tag and gives the
// byte position of the offending placeholder in it, like every ParseTag error.
func (s *Spec) KeyError(err error) error {
	return &TagError{Tag: s.Tag, Field: "key", Pos: s.keyErrPos(err), Err: err}
}
