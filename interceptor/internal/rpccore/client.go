package rpccore

import (
	"time"

	"github.com/locktag/locktag/locker/guard/retry"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"
)

// RetryClass sorts a failed call's code and status details for the client
// retry policy, and returns the google.rpc.RetryInfo delay (0 if none):
//
//	Unavailable                                   Unavailable
//	ResourceExhausted with a RetryInfo            Throttled (without: Done —
//	                                              a size limit, not a wait)
//	Aborted with locktag's reason LOCK_BUSY       Busy
//	Aborted otherwise                             InFlight
//	FailedPrecondition, IDEMPOTENCY_KEY_REUSED    KeyReused
//	anything else                                 Done
func RetryClass(c Code, details []proto.Message) (retry.Class, time.Duration) {
	var hint time.Duration
	hasHint, reason := false, ""
	for _, d := range details {
		switch v := d.(type) {
		case *errdetails.RetryInfo:
			hasHint, hint = true, max(v.GetRetryDelay().AsDuration(), 0)
		case *errdetails.ErrorInfo:
			if v.GetDomain() == ErrorDomain {
				reason = v.GetReason()
			}
		}
	}
	switch {
	case c == Unavailable:
		return retry.Unavailable, hint
	case c == ResourceExhausted && hasHint:
		return retry.Throttled, hint
	case c == Aborted && reason == ReasonBusy:
		return retry.Busy, hint
	case c == Aborted:
		return retry.InFlight, hint
	case c == FailedPrecondition && reason == ReasonKeyReused:
		return retry.KeyReused, 0
	}
	return retry.Done, 0
}
