package records

import (
	"context"
	"time"

	"github.com/locktag/locktag/locker/internal/hub"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/protocol"
)

// Result is what Claim found: the record, now in flight and owned by
// Token (Status Claimed; Sent is when the claiming call was sent, where
// the in-flight lease is counted from), or done with the same fingerprint
// (Status Done; Outcome is the stored outcome to replay, and Token owns
// nothing).
type Result struct {
	Begun
	Token string
	Sent  time.Time
}

// Replay reports whether r found the record done: the caller replays
// r.Outcome and owns nothing.
func (r Result) Replay() bool { return r.Status != Claimed }

// Claim begins record k for fingerprint fp with a new owner token and an
// in-flight lease of lease; with wait > 0 it waits for an in-flight
// execution to end (Wait) and tries again. It returns the Begin that
// claimed the record or found it done. Errors: lockerr.ErrMismatch,
// lockerr.ErrInFlight, or Begin's.
func Claim(ctx context.Context, st *Store, k Keys, fp string, lease, wait time.Duration) (Result, error) {
	token := protocol.NewToken()
	var w *hub.Waiter
	if wait > 0 {
		// Registered before the first try so a wake-up published right
		// after it is not dropped.
		w = st.nd.Hub.Register(token)
		defer st.nd.Hub.Unregister(w)
	}
	var got Result
	try := func(wait time.Duration, sent time.Time) (bool, time.Duration, error) {
		b, err := st.Begin(ctx, k, fp, token, lease, wait)
		switch {
		case err != nil:
			return true, 0, err
		case b.Status == InFlight:
			return false, b.PTTL, nil
		case b.Status == Mismatch:
			return true, 0, lockerr.ErrMismatch
		}
		got = Result{Begun: b, Token: token, Sent: sent}
		return true, 0, nil
	}
	sent := time.Now()
	done, pttl, err := try(wait, sent)
	switch {
	case done && err != nil:
		return Result{}, err
	case done:
		return got, nil
	case wait <= 0:
		return Result{}, lockerr.ErrInFlight
	}
	err = st.Wait(ctx, k, w, sent, sent.Add(wait), pttl, func(left time.Duration) (bool, time.Duration, error) {
		return try(left, time.Now())
	})
	if err != nil {
		return Result{}, err
	}
	return got, nil
}
