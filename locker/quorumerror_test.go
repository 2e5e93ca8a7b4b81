package locker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// TestQuorumErrorEveryOperation: every Redlock call that too many masters
// fail returns a *QuorumError naming its operation, matching ErrQuorum and
// ErrUnavailable (not ErrProtocol), with each failed master's error in
// Errs: the engine's undecided tallies come up converted on every path.
func TestQuorumErrorEveryOperation(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	logger, _ := logtest.New()
	lk := newRedlock(t, srvs, locker.WithLogger(logger))
	ctx := context.Background()
	// Fixed leases: no renewal runs, and loses them, while masters are down.
	held := mustObtain(t, lk, ctx, "held", locker.Params{TTL: time.Minute})
	kept := mustObtain(t, lk, ctx, "kept", locker.Params{TTL: time.Minute})
	srvs[1].Stop()
	srvs[2].Stop()

	for _, c := range []struct {
		op   string
		call func() error
	}{
		{"ttl", func() error { _, err := held.TTL(ctx); return err }},
		{"extend", func() error { return held.Extend(ctx, time.Minute) }},
		{"obtain", func() error { _, err := lk.Obtain(held.Context(), "held", locker.Params{}); return err }}, // re-entry
		{"obtain", func() error { _, err := lk.Obtain(ctx, "free", locker.Params{TTL: time.Minute}); return err }},
		{"obtain", func() error {
			_, err := lk.Obtain(ctx, "waited", locker.Params{TTL: time.Minute, Wait: time.Minute})
			return err
		}},
		{"inspect", func() error { _, err := lk.Inspect(ctx, "held"); return err }},
		{"keep", func() error { return kept.ReleaseAfter(ctx, time.Minute) }},
		{"release", func() error { return held.Release(ctx) }},
		{"force-release", func() error { return lk.ForceRelease(ctx, "held", "test") }},
	} {
		err := c.call()
		var qe *locker.QuorumError
		if !errors.As(err, &qe) {
			t.Errorf("%s: %T %v, want a *QuorumError", c.op, err, err)
			continue
		}
		if !errors.Is(err, locker.ErrQuorum) || !errors.Is(err, locker.ErrUnavailable) || errors.Is(err, locker.ErrProtocol) {
			t.Errorf("%s: %v matches ErrQuorum %v, ErrUnavailable %v, ErrProtocol %v; want true, true, false", c.op, err,
				errors.Is(err, locker.ErrQuorum), errors.Is(err, locker.ErrUnavailable), errors.Is(err, locker.ErrProtocol))
		}
		if qe.Op != c.op || qe.Need != 2 || len(qe.Errs) != 3 || qe.Errs[0] != nil || qe.Errs[1] == nil || qe.Errs[2] == nil {
			t.Errorf("%s: %+v, want op %q, need 2, masters 1 and 2 failed", c.op, qe, c.op)
		}
		if want := "locker: quorum not reached: " + c.op + ": "; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "; master 2: ") {
			t.Errorf("%s: message %q, want it to start %q and name master 2's error", c.op, err, want)
		}
	}
}
