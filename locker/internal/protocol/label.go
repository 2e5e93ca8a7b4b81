package protocol

import (
	"strings"
	"unicode/utf8"
)

// MaxLabel is the longest holder label stored with a lock, in bytes
// (locker.MaxLabel).
const MaxLabel = 200

// Label is the label a hold stores: the Locker's (WithLabel) and the
// call's (Params.Label) joined with "; ", cut to MaxLabel bytes of valid
// UTF-8; "" for none.
func Label(locker, call string) string {
	s := locker
	switch {
	case call == "":
	case s == "":
		s = call
	default:
		s = s + "; " + call
	}
	return Cut(s, MaxLabel)
}

// maxReason caps a force-release reason, in bytes.
const maxReason = 200

// Reason is a force-release reason as recorded: "no reason given" for
// none, cut to 200 bytes of valid UTF-8.
func Reason(reason string) string {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		return "no reason given"
	}
	return Cut(reason, maxReason)
}

// Cut cuts s to max bytes, then to valid UTF-8: a rune cut in two at the
// end, and any invalid bytes, are dropped.
func Cut(s string, max int) string {
	if len(s) <= max && utf8.ValidString(s) {
		return s
	}
	if len(s) > max {
		s = s[:max]
	}
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
