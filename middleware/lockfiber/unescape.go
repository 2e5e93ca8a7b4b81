package lockfiber

import (
	"strings"

	"github.com/locktag/locktag/middleware/lockfiber/internal/httpcore"
)

// paramValue turns vals[at], Fiber's value of a route's path parameter,
// into the decoded value every locktag adapter gives {path.X}; vals are
// Fiber's values of all the route's parameters, in the order the route
// names them. Without UnescapePath (the default) Fiber matches the path as
// sent and each value is a piece of it: httpcore.UnescapePath decodes it
// (a '+' stays a plus; a malformed escape is a 400). With UnescapePath,
// Fiber decoded the whole path before matching, as fasthttp decodes a
// query value: a '+' became a space, and a malformed escape was kept as
// it is. decoded is that path (c.Path()), sent the path as sent; the
// result does not alias either.
func paramValue(vals []string, at int, unescaped bool, sent, decoded string) (string, error) {
	v := vals[at]
	if v == "" {
		return "", nil
	}
	if !unescaped {
		return httpcore.UnescapePath(strings.Clone(v))
	}
	if !strings.ContainsAny(v, " %") || !strings.ContainsAny(sent, "%+") {
		// Only a space (a '+' or %20) and a '%' (a malformed escape or
		// %25) have two origins; a path without '%' and '+' has one
		// spelling.
		return strings.Clone(v), nil
	}
	return fromArgDecoded(vals, at, sent, decoded)
}

// fromArgDecoded finds vals[at] in decoded, the path fasthttp decoded from
// sent, takes the bytes of sent it came from and decodes them as a path.
// Fiber does not say where in the path a value is, only that the values
// appear in order, so every place where vals[at] can be, after the
// values before it and before the values after it, is tried, and the
// readings must agree. They differ only when the path spells that text
// twice (a space once as '+' and once as %20, or a '%' once malformed):
// ErrPathAmbiguous, a 400. When decoded is not what fasthttp makes of
// sent (the path was rewritten), Fiber's value is used as it is.
func fromArgDecoded(vals []string, at int, sent, decoded string) (string, error) {
	v := vals[at]
	asFiber, from := argDecode(sent)
	if asFiber != decoded {
		return strings.Clone(v), nil
	}
	// lo: where v starts when every value takes its first place; hi:
	// where it starts when every value takes its last.
	lo := 0
	for k := 0; k <= at; k++ {
		i := strings.Index(decoded[lo:], vals[k])
		if i < 0 {
			return strings.Clone(v), nil
		}
		if lo += i; k < at {
			lo += len(vals[k])
		}
	}
	hi := len(decoded)
	for k := len(vals) - 1; k >= at; k-- {
		if hi = strings.LastIndex(decoded[:hi], vals[k]); hi < 0 {
			return strings.Clone(v), nil
		}
	}
	var (
		got        string
		found, bad bool
	)
	for i := lo; i <= hi; i++ {
		if !strings.HasPrefix(decoded[i:], v) {
			continue
		}
		d, err := httpcore.UnescapePath(sent[from[i]:from[i+len(v)]])
		switch {
		case err != nil:
			bad = true
		case !found:
			got, found = d, true
		case d != got:
			return "", httpcore.ErrPathAmbiguous
		}
	}
	switch {
	case bad && found:
		return "", httpcore.ErrPathAmbiguous
	case bad:
		return "", httpcore.ErrPathEscape
	case !found:
		return strings.Clone(v), nil
	}
	return strings.Clone(got), nil
}

// argDecode decodes p as fasthttp.AppendUnquotedArg does (Fiber's
// UnescapePath): a %XX escape is its byte, a '+' a space, a '%' not
// followed by two hex digits stays a '%', and a '%' among the last two
// bytes keeps the rest as it is. at[i] is the offset in p of the bytes
// that decoded byte i came from; at[len(decoded)] is len(p).
func argDecode(p string) (string, []int) {
	var b strings.Builder
	b.Grow(len(p))
	at := make([]int, 0, len(p)+1)
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c != '%' {
			if c == '+' {
				c = ' '
			}
			b.WriteByte(c)
			at = append(at, i)
			continue
		}
		if i+2 >= len(p) {
			for ; i < len(p); i++ {
				b.WriteByte(p[i])
				at = append(at, i)
			}
			break
		}
		hi, lo := unhex(p[i+1]), unhex(p[i+2])
		if hi < 0 || lo < 0 {
			b.WriteByte('%')
			at = append(at, i)
			continue
		}
		b.WriteByte(byte(hi<<4 | lo))
		at = append(at, i)
		i += 2
	}
	return b.String(), append(at, len(p))
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
