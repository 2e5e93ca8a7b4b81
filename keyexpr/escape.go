package keyexpr

import (
	"crypto/sha256"
	"unicode/utf8"
)

// Escaping.
//
// A value is copied into the key byte by byte; a byte in the escape set is
// written as '%' and two upper-case hex digits instead. The escape set is
//
//   - '%' itself, so every '%' in an escaped value starts an escape and
//     decoding is unambiguous;
//   - ':', '{' and '}', so values cannot forge the conventional separator or a
//     Redis Cluster hash tag;
//   - bytes 0x00-0x20 and 0x7f (space and control characters);
//   - bytes of invalid UTF-8 (valid multi-byte UTF-8 is kept as is);
//   - per template, the first byte of every literal that sits between two
//     placeholders ("-" in "{path.a}-{path.b}").
//
// A value over the length cap, when hashing is on, is written as hashMarker
// followed by the 64 lower-case hex digits of its SHA-256. An escaped value
// never contains "%s" (every '%' it contains is followed by a hex digit), and
// the hashed form contains only '%', letters and digits, none of which can be
// a separator, so the two forms are told apart and split the same way.

// hashMarker starts the hashed form of an over-long value.
const hashMarker = "%sha256"

const upperHex = "0123456789ABCDEF"
const lowerHex = "0123456789abcdef"

// escapeTable[c] is true for bytes that need attention: bytes that are always
// escaped, separator bytes of the template, and all bytes >= 0x80 (which are
// kept when they are part of valid UTF-8).
type escapeTable [256]bool

func newEscapeTable(extra []byte) escapeTable {
	var t escapeTable
	for c := 0; c <= 0x20; c++ {
		t[c] = true
	}
	for c := 0x7f; c <= 0xff; c++ {
		t[c] = true
	}
	t['%'], t[':'], t['{'], t['}'] = true, true, true, true
	for _, c := range extra {
		t[c] = true
	}
	return t
}

// appendEscaped appends the escaped form of v to b. When v needs no escaping
// it is a single append.
func appendEscaped(b []byte, v string, t *escapeTable) []byte {
	i := 0
	for i < len(v) && !t[v[i]] {
		i++
	}
	if i == len(v) {
		return append(b, v...)
	}
	b = append(b, v[:i]...)
	for i < len(v) {
		c := v[i]
		if !t[c] {
			b = append(b, c)
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			if r, size := utf8.DecodeRuneInString(v[i:]); r != utf8.RuneError || size > 1 {
				b = append(b, v[i:i+size]...)
				i += size
				continue
			}
		}
		b = append(b, '%', upperHex[c>>4], upperHex[c&0x0f])
		i++
	}
	return b
}

// appendHashed appends hashMarker and the hex SHA-256 of v to b.
func appendHashed(b []byte, v string) []byte {
	sum := sha256.Sum256([]byte(v))
	b = append(b, hashMarker...)
	for _, c := range sum {
		b = append(b, lowerHex[c>>4], lowerHex[c&0x0f])
	}
	return b
}

// baseEscapes is the escape set of a template without separator bytes of
// its own.
var baseEscapes = newEscapeTable(nil)

// Escape returns v escaped as a template escapes a placeholder's value, for
// building a lock name by hand that matches a tag's: the tag
// key:"order:{path.id}" and lk.Obtain(ctx, "order:"+keyexpr.Escape(id), p)
// take the same lock for every id. It applies the escapes every template
// applies; a template with its own separator between two placeholders
// ("{path.a}-{path.b}") also escapes that separator, which Escape does not.
// Escape applies no length cap.
func Escape(v string) string {
	return string(appendEscaped(nil, v, &baseEscapes))
}
