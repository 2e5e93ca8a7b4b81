package records

import (
	"context"
	"time"

	"github.com/locktag/locktag/locker/internal/hub"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/names"
)

// Claim begins record k for fingerprint fp with a new owner token and an
// in-flight lease of lease; with wait > 0 it waits for an in-flight
// execution to end (Wait) and tries again. begun turns a Begin that
// claimed (sent: when its call was sent) or found the record done into the
// caller's value. Errors: lockerr.ErrMismatch, lockerr.ErrInFlight, or
// Begin's.
func Claim[C any](ctx context.Context, st *Store, k Keys, fp string, lease, wait time.Duration, begun func(b Begun, token string, sent time.Time) C) (C, error) {
	token := names.NewToken()
	var w *hub.Waiter
	if wait > 0 {
		// Registered before the first try so a wake-up published right
		// after it is not dropped.
		w = st.nd.Hub.Register(token)
		defer st.nd.Hub.Unregister(w)
	}
	var c, zero C
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
		c = begun(b, token, sent)
		return true, 0, nil
	}
	sent := time.Now()
	done, pttl, err := try(wait, sent)
	switch {
	case done && err != nil:
		return zero, err
	case done:
		return c, nil
	case wait <= 0:
		return zero, lockerr.ErrInFlight
	}
	err = st.Wait(ctx, k, w, sent, sent.Add(wait), pttl, func(left time.Duration) (bool, time.Duration, error) {
		return try(left, time.Now())
	})
	if err != nil {
		return zero, err
	}
	return c, nil
}
