package callctx

import (
	"context"
	"strings"
	"time"
)

// While a Redis Cluster moves a slot from one master to another, a call
// on its keys can be answered, without having run, by MOVED (the slot is
// served elsewhere now), ASK (this key is already on the importing
// master) or TRYAGAIN (a script's keys are split between the two masters
// for the moment). Redis asks clients to follow the first two and to try
// the last again after a short pause; a client library follows MOVED and
// ASK a few times, but a migration in batches outlasts its few quick
// tries. Every call is therefore tried again on those answers, with a
// growing pause, until it runs or its context's deadline (every call has
// one, see Bounds) is too close for another try. Nothing ran on those
// answers, so a retry never runs a script twice.

// Pauses between tries while a slot moves.
const (
	firstPause = 2 * time.Millisecond
	maxPause   = 50 * time.Millisecond
	// maxTries bounds a call without a deadline (none is made so).
	maxTries = 64
)

// slotMoving reports whether err is a Cluster's answer that the call did
// not run because its slot is moving (MOVED, ASK, TRYAGAIN).
func slotMoving(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "TRYAGAIN") || strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
}

// whileMoving takes the result of a first call, v and err, and runs call
// again while its error says the slot is moving and ctx leaves time for
// a pause and another try; it returns the last result.
func whileMoving[T any](ctx context.Context, v T, err error, call func() (T, error)) (T, error) {
	pause := firstPause
	for try := 1; slotMoving(err) && try < maxTries; try++ {
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < 2*pause {
			break
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
		pause = min(2*pause, maxPause)
		v, err = call()
	}
	return v, err
}
