package locker

import "unicode/utf8"

// MaxLabel is the longest holder label stored with a lock, in bytes
// (WithLabel and Params.Label together): a label cannot blow up Redis. A
// longer Params.Label is cut; a longer WithLabel is refused.
const MaxLabel = 200

// labelSep joins the Locker's label and the call's.
const labelSep = "; "

// label is the label a hold with p stores: WithLabel's and p.Label's,
// joined, cut to MaxLabel bytes of valid UTF-8; "" for none.
func (l *Locker) label(p Params) string {
	s := l.o.label
	switch {
	case p.Label == "":
	case s == "":
		s = p.Label
	default:
		s = s + labelSep + p.Label
	}
	return cutText(s, MaxLabel)
}

// labelArg is the label argument of a hold with p: nil when there is no
// label (nothing is sent or stored), WithLabel's boxed once when p has
// none.
func (l *Locker) labelArg(p Params) any {
	if p.Label == "" {
		return l.lockerLabel
	}
	return l.label(p)
}

// cutText cuts s to max bytes, then to valid UTF-8.
func cutText(s string, max int) string {
	if len(s) <= max && utf8.ValidString(s) {
		return s
	}
	if len(s) > max {
		s = s[:max]
	}
	// Drop a rune cut in two at the end, and any invalid bytes.
	b := make([]byte, 0, len(s))
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
				continue
			}
		}
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}
