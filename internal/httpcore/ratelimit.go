package httpcore

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/locktag/locktag/locker/guard"
)

// SetRateLimit sets the RateLimit-Policy and RateLimit fields of the IETF
// httpapi draft "RateLimit header fields for HTTP"
// (draft-ietf-httpapi-ratelimit-headers), in its Structured Field syntax,
// for a rate tag's quota q:
//
//	RateLimit-Policy: "default";q=100;w=60
//	RateLimit: "default";r=37;t=25
//
// The policy item is q.Policy as an sf-string, with q the requests per w
// seconds (a period that is not a whole number of seconds is scaled to
// the next whole number, rounding q down). For a refusal (retry > 0) the
// service limit is r=0 with t the retry hint in seconds, rounded up, as
// Retry-After says; for an admitted request r is q.Remaining and t the
// seconds until the whole burst is back (q.Reset, rounded up).
func SetRateLimit(h http.Header, q *guard.Quota, retry time.Duration) {
	name := sfString(q.Policy)
	n, w := policyWindow(q.Limit, q.Period)
	h.Set("RateLimit-Policy", name+";q="+strconv.FormatInt(n, 10)+";w="+strconv.FormatInt(w, 10))
	r, t := int64(q.Remaining), seconds(q.Reset)
	if retry > 0 {
		r, t = 0, seconds(retry)
	}
	h.Set("RateLimit", name+";r="+strconv.FormatInt(r, 10)+";t="+strconv.FormatInt(t, 10))
}

// policyWindow expresses n requests per period as q per w whole seconds
// (the draft's w is an integer, at least 1): the period itself when it is
// whole seconds, else the next whole number of seconds with q rounded
// down, so the policy never promises more than the limit admits.
func policyWindow(n int, period time.Duration) (q, w int64) {
	if period%time.Second == 0 {
		return int64(n), int64(period / time.Second)
	}
	w = seconds(period)
	return int64(float64(n) * float64(time.Duration(w)*time.Second) / float64(period)), w
}

// sfString quotes s as a Structured Field String (RFC 9651): printable
// ASCII, with '"' and '\' escaped; any other byte becomes '?'.
func sfString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
