package records

import (
	"context"
	"errors"
	"time"

	"github.com/locktag/locktag/locker/internal/hub"
	"github.com/locktag/locktag/locker/internal/lockerr"
)

// Wait waits until waitUntil for the in-flight record k (lease pttl left,
// as a first try sent at sent found it) to end, woken by the end script's
// notice to w, and calls retry then with the wait left: retry reports
// done when it has an answer for the caller. A notice lost with the
// subscriber connection costs at most the record's remaining lease.
// ErrInFlight: the wait ran out (joined with ctx's error when ctx ended).
func (s *Store) Wait(ctx context.Context, k Keys, w *hub.Waiter, sent, waitUntil time.Time, pttl time.Duration,
	retry func(wait time.Duration) (done bool, pttl time.Duration, err error)) error {
	wt := s.nd.Hub.Watch(k.Channel, w)
	defer wt.Close()
	deadline := time.NewTimer(time.Until(waitUntil))
	defer deadline.Stop()
	recheck, observed := false, false
	for {
		missed, err := wt.Ensure(ctx, sent)
		if err != nil {
			return errors.Join(lockerr.ErrInFlight, err)
		}
		recheck = recheck || missed
		if recheck {
			recheck = false
			sent = time.Now()
			done, left, err := retry(time.Until(waitUntil))
			if err != nil || done {
				return err
			}
			pttl, observed = left, false
		}
		if !observed {
			observed = true
			wt.Observe(pttl, 0)
		}
		select {
		case <-w.Grant:
			recheck = true
		case <-w.Kick:
			wt.Broken()
			recheck = true
		case <-w.Check:
			recheck = true
		case <-wt.Polled():
			recheck = true
		case <-deadline.C:
			return lockerr.ErrInFlight
		case <-ctx.Done():
			return errors.Join(lockerr.ErrInFlight, ctx.Err())
		}
	}
}
