package rpccore

import (
	"testing"
	"time"

	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
)

// Every Unavailable and Aborted refusal carries a google.rpc.RetryInfo,
// whichever kind and guard answer it, with and without a hint of the
// outcome's own (guard.Outcome.Retry decides it); other codes carry the
// outcome's hint, and DeadlineExceeded and Canceled the default one.
func TestRetryInfoOnEveryRetryableCode(t *testing.T) {
	retryable := 0
	for k := guard.OK; k.String() != "unknown"; k++ {
		if CodeOf(k) == OK {
			continue // not a refusal
		}
		for _, idem := range []bool{false, true} {
			for _, hint := range []time.Duration{0, 3 * time.Second} {
				o := guard.Outcome{Kind: k, Idempotency: idem, RetryAfter: hint}
				if k == guard.NotStored {
					o.Record = &guard.Record{Status: 0}
				}
				c, _, details := Refusal(o)
				var got time.Duration
				for _, d := range details {
					if ri, ok := d.(*errdetails.RetryInfo); ok {
						got = ri.GetRetryDelay().AsDuration()
					}
				}
				switch {
				case (c == Unavailable || c == Aborted || c == DeadlineExceeded || c == Canceled) && hint == 0:
					retryable++
					if got != time.Second {
						t.Errorf("%v (idempotency %v): code %d with RetryInfo %v, want 1s", k, idem, c, got)
					}
				case hint > 0 && k != guard.BadKey && got != hint: // BadKey never has one
					t.Errorf("%v (idempotency %v): RetryInfo %v, want the outcome's %v", k, idem, got, hint)
				case hint == 0 && got != 0 && c != ResourceExhausted:
					t.Errorf("%v (idempotency %v): code %d with RetryInfo %v, want none", k, idem, c, got)
				}
			}
		}
	}
	if retryable != 12 { // Unavailable, Busy, InFlight, Lost, Deadline, Canceled; lock and idempotency
		t.Fatalf("%d retryable cases, want 12: the kinds answered with them changed", retryable)
	}
}
