package guard

import "fmt"

// DefaultMaxKeyLen is the longest client idempotency key
// ParseIdempotencyKey accepts when given no cap: 255 bytes.
const DefaultMaxKeyLen = 255

// ParseIdempotencyKey returns the key a client sent in an Idempotency-Key
// header field (or idempotency-key gRPC metadata). Per the IETF httpapi
// draft the field is a Structured Field string, "...", in which \" and \\
// stand for " and \; the bare text is accepted too. The key must be 1 to
// maxLen bytes (maxLen < 1 means DefaultMaxKeyLen) of printable
// ASCII: space to '~' inside quotes, '!' to '~' without '"' and '\' bare.
// Errors wrap ErrBadIdempotencyKey and say what is wrong, never the value.
func ParseIdempotencyKey(v string, maxLen int) (string, error) {
	if maxLen < 1 {
		maxLen = DefaultMaxKeyLen
	}
	if len(v) >= 2 && v[0] == '"' {
		if v[len(v)-1] != '"' {
			return "", fmt.Errorf("%w: unterminated quoted string", ErrBadIdempotencyKey)
		}
		b := make([]byte, 0, len(v)-2)
		for i := 1; i < len(v)-1; i++ {
			ch := v[i]
			switch {
			case ch == '\\':
				i++
				if i == len(v)-1 || (v[i] != '"' && v[i] != '\\') {
					return "", fmt.Errorf("%w: bad escape in quoted string", ErrBadIdempotencyKey)
				}
				ch = v[i]
			case ch == '"':
				return "", fmt.Errorf("%w: unescaped quote in quoted string", ErrBadIdempotencyKey)
			case ch < 0x20 || ch > 0x7e:
				return "", fmt.Errorf("%w: not printable ASCII", ErrBadIdempotencyKey)
			}
			b = append(b, ch)
		}
		v = string(b)
	} else {
		for i := 0; i < len(v); i++ {
			if ch := v[i]; ch <= 0x20 || ch > 0x7e || ch == '"' || ch == '\\' {
				return "", fmt.Errorf("%w: not a quoted string or printable ASCII without spaces", ErrBadIdempotencyKey)
			}
		}
	}
	switch {
	case v == "":
		return "", fmt.Errorf("%w: empty", ErrBadIdempotencyKey)
	case len(v) > maxLen:
		return "", fmt.Errorf("%w: longer than %d bytes", ErrBadIdempotencyKey, maxLen)
	}
	return v, nil
}
