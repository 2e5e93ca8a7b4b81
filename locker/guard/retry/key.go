package retry

import (
	"crypto/rand"
	"strings"
)

// NewKey returns a new idempotency key: 26 characters of base32 carrying
// 130 random bits (crypto/rand.Text), unique without coordination.
func NewKey() string { return rand.Text() }

// FormatKey returns key as a Structured Field string (RFC 9651), the form
// of the Idempotency-Key field in the IETF draft: in double quotes, with
// `"` and `\` escaped. The server (guard.ParseIdempotencyKey) reads this
// form and the bare one; key must be printable ASCII for either.
func FormatKey(key string) string {
	var b strings.Builder
	b.Grow(len(key) + 2)
	b.WriteByte('"')
	for i := 0; i < len(key); i++ {
		if key[i] == '"' || key[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(key[i])
	}
	b.WriteByte('"')
	return b.String()
}
