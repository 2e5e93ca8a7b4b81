package rpccore

import (
	"testing"
	"time"

	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
)

// A rate tag's refusal: ResourceExhausted with the reason RATE_LIMITED,
// a RetryInfo of the exact time to the next slot and a QuotaFailure that
// names the guard and the policy, never the key.
func TestRateLimitedRefusal(t *testing.T) {
	o := guard.Outcome{Kind: guard.RateLimited, Name: "/shop.v1.Inventory/Reserve", RetryAfter: 1234 * time.Millisecond,
		Quota: &guard.Quota{Policy: "default", Limit: 100, Period: time.Minute, Burst: 100}}
	c, msg, details := Refusal(o)
	if c != ResourceExhausted || msg == "" {
		t.Fatalf("code %d, message %q", c, msg)
	}
	var reason string
	var retry time.Duration
	var qf *errdetails.QuotaFailure
	for _, d := range details {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			reason = d.GetReason()
		case *errdetails.RetryInfo:
			retry = d.GetRetryDelay().AsDuration()
		case *errdetails.QuotaFailure:
			qf = d
		}
	}
	if reason != ReasonRateLimited || retry != o.RetryAfter || qf == nil || len(qf.Violations) != 1 {
		t.Fatalf("reason %q, retry %v, quota failure %v", reason, retry, qf)
	}
	if v := qf.Violations[0]; v.Subject != o.Name || v.QuotaId != "default" || v.QuotaValue != 100 || v.Description != "rate limit exceeded: at most 100 requests per 1m0s" {
		t.Fatalf("violation %v", v)
	}
}
