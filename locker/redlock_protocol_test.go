package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// TestRedlockProtocolRefusal: a QuorumError matches ErrProtocol when the
// masters holding a record of another protocol deny the quorum on their
// own, and only then; it always matches ErrQuorum. A waiter does not wait
// on a refusal, and no refused record changes.
func TestRedlockProtocolRefusal(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	logger, rec := logtest.New()
	lk := newRedlock(t, srvs, locker.WithLogger(logger))
	ctx := context.Background()

	// One master refuses: the other two are a quorum.
	check := futureRecord(t, srvs[0], "mutex", "locktag:{one}")
	le, err := lk.Obtain(ctx, "one", locker.Params{TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("one refusing master of 3: %v", err)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	check()

	// Two of three refuse: a quorum cannot be had until the records go.
	for _, wait := range []time.Duration{0, 5 * time.Second} {
		checks := []func(){
			futureRecord(t, srvs[0], "mutex", "locktag:{two}"),
			futureRecord(t, srvs[2], "mutex", "locktag:{two}"),
		}
		start := time.Now()
		_, err = lk.Obtain(ctx, "two", locker.Params{TTL: 10 * time.Second, Wait: wait})
		var qe *locker.QuorumError
		if !errors.As(err, &qe) || !errors.Is(err, locker.ErrQuorum) || !errors.Is(err, locker.ErrProtocol) {
			t.Fatalf("two refusing masters of 3 (wait %v): %v; want a QuorumError matching ErrQuorum and ErrProtocol", wait, err)
		}
		if qe.Need != 2 || qe.OK != 1 || qe.Errs[1] != nil || !errors.Is(qe.Errs[0], locker.ErrProtocol) || !errors.Is(qe.Errs[2], locker.ErrProtocol) {
			t.Fatalf("quorum error %+v", qe)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("a refusal took %v (wait %v); it must not wait", d, wait)
		}
		for _, c := range checks {
			c()
		}
	}

	if n := len(rec.Matching("records of another protocol")); n != 1 {
		t.Errorf("the refusals were logged %d times, want once", n)
	}

	// One refuses and one is down: the quorum fails, but not because of
	// the protocol alone (the stopped master might have answered).
	check = futureRecord(t, srvs[0], "mutex", "locktag:{mixed}")
	srvs[2].Stop()
	_, err = lk.Obtain(ctx, "mixed", locker.Params{TTL: 10 * time.Second})
	if !errors.Is(err, locker.ErrQuorum) || !errors.Is(err, locker.ErrUnavailable) || errors.Is(err, locker.ErrProtocol) {
		t.Fatalf("one refusing, one stopped master of 3: %v; want ErrQuorum, not ErrProtocol", err)
	}
	check()
}
