package httpcore

import (
	"net/http"
	"testing"
	"time"

	"github.com/locktag/locktag/locker/guard"
)

// Every 503 carries Retry-After, whichever kind and guard answer it: the
// lock's and the idempotency guard's, with and without a hint of the
// outcome's own (guard.Outcome.Retry decides it); so do 409 and 429.
// Other statuses carry the outcome's hint only.
func TestRetryAfterOnEvery503(t *testing.T) {
	n503 := 0
	for k := guard.OK; k.String() != "unknown"; k++ {
		for _, idem := range []bool{false, true} {
			for _, hint := range []time.Duration{0, 3 * time.Second} {
				o := guard.Outcome{Kind: k, Idempotency: idem, RetryAfter: hint}
				h := http.Header{}
				SetRetryAfter(h, o)
				got := h.Get("Retry-After")
				switch {
				case hint == 0 && (Status(k) == http.StatusServiceUnavailable || Status(k) == http.StatusConflict || Status(k) == http.StatusTooManyRequests):
					if Status(k) == http.StatusServiceUnavailable {
						n503++
					}
					if got != "1" {
						t.Errorf("%v (idempotency %v): %d with Retry-After %q, want 1", k, idem, Status(k), got)
					}
				case hint > 0 && got != "3":
					t.Errorf("%v (idempotency %v): Retry-After %q, want the outcome's 3", k, idem, got)
				case hint == 0 && got != "":
					t.Errorf("%v (idempotency %v): status %d with Retry-After %q, want none", k, idem, Status(k), got)
				}
			}
		}
	}
	if n503 != 8 { // Unavailable, Deadline, Canceled, Lost; lock and idempotency
		t.Fatalf("%d 503 cases, want 8: the kinds answered with 503 changed", n503)
	}
}
