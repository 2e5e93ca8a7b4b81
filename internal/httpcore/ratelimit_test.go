package httpcore

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/locktag/locktag/locker/guard"
)

// The fields follow the draft's Structured Field syntax: a quoted policy
// name, q and w on the policy, r and t on the limit.
var (
	policyField = regexp.MustCompile(`^"(?:[^"\\]|\\["\\])*";q=[0-9]+;w=[1-9][0-9]*$`)
	limitField  = regexp.MustCompile(`^"(?:[^"\\]|\\["\\])*";r=[0-9]+;t=[0-9]+$`)
)

func TestSetRateLimit(t *testing.T) {
	for _, tc := range []struct {
		q            guard.Quota
		retry        time.Duration
		policy, rate string
	}{
		{guard.Quota{Policy: "default", Limit: 100, Period: time.Minute, Remaining: 37, Reset: 24100 * time.Millisecond}, 0,
			`"default";q=100;w=60`, `"default";r=37;t=25`},
		{guard.Quota{Policy: "default", Limit: 100, Period: time.Minute, Reset: time.Minute}, 11500 * time.Millisecond,
			`"default";q=100;w=60`, `"default";r=0;t=12`},
		{guard.Quota{Policy: "api", Limit: 10, Period: 100 * time.Millisecond, Remaining: 9, Reset: 10 * time.Millisecond}, 0,
			`"api";q=100;w=1`, `"api";r=9;t=1`},
		{guard.Quota{Policy: "x", Limit: 1, Period: 1500 * time.Millisecond}, time.Millisecond,
			`"x";q=1;w=2`, `"x";r=0;t=1`},
		{guard.Quota{Policy: "x", Limit: 5, Period: 90 * time.Second, Remaining: 5}, 0,
			`"x";q=5;w=90`, `"x";r=5;t=0`},
		{guard.Quota{Policy: "POST /a\"b\\c é", Limit: 1, Period: time.Hour, Remaining: 0, Reset: time.Hour}, 0,
			`"POST /a\"b\\c ??";q=1;w=3600`, `"POST /a\"b\\c ??";r=0;t=3600`},
	} {
		h := http.Header{}
		SetRateLimit(h, &tc.q, tc.retry)
		if p, r := h.Get("RateLimit-Policy"), h.Get("RateLimit"); p != tc.policy || r != tc.rate {
			t.Errorf("%+v retry %v: RateLimit-Policy %s, RateLimit %s; want %s, %s", tc.q, tc.retry, p, r, tc.policy, tc.rate)
		}
		if !policyField.MatchString(h.Get("RateLimit-Policy")) || !limitField.MatchString(h.Get("RateLimit")) {
			t.Errorf("not the draft's syntax: %q, %q", h.Get("RateLimit-Policy"), h.Get("RateLimit"))
		}
	}
}

// A rate tag's refusal: 429, Retry-After and the RateLimit fields agree
// on when to come back; other refusals carry no RateLimit fields.
func TestRefusalHeaders(t *testing.T) {
	o := guard.Outcome{Kind: guard.RateLimited, RetryAfter: 2100 * time.Millisecond,
		Quota: &guard.Quota{Policy: "default", Limit: 3, Period: time.Minute, Reset: 55 * time.Second}}
	h := http.Header{}
	SetRefusalHeaders(h, o)
	if Status(o.Kind) != http.StatusTooManyRequests || h.Get("Retry-After") != "3" || h.Get("RateLimit") != `"default";r=0;t=3` ||
		h.Get("RateLimit-Policy") != `"default";q=3;w=60` {
		t.Fatalf("status %d, headers %v", Status(o.Kind), h)
	}
	h = http.Header{}
	SetRefusalHeaders(h, guard.Outcome{Kind: guard.LimitFull, RetryAfter: time.Second})
	if h.Get("RateLimit") != "" || h.Get("RateLimit-Policy") != "" || h.Get("Retry-After") != "1" {
		t.Fatalf("limit full: %v", h)
	}
	if b := string(Problem(o, 429)); b != `{"type":"https://github.com/locktag/locktag/blob/main/docs/problems.md#rate-limited","title":"Rate limit exceeded","status":429,"detail":"the rate limit of this resource is used up; retry after the time in Retry-After"}` {
		t.Fatalf("problem %s", b)
	}
}
