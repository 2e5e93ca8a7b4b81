package lockertest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
)

// Reshard moves one lock's slot, with 300 other keys in it, between two
// masters of a 3-master Cluster moves times (five keys a MIGRATE, so the
// lock's keys are split between the masters for a while each time) while two Lockers, four callers
// each, take it (wait 2s), hold it 1ms and release it. A slot migration is
// routine: 0 overlaps, 0 failed releases, 0 errors and 0 callers giving
// up. The control runs a two-key script on the lock's keys through the
// driver alone, as a client library without the Locker's retries would:
// it must meet the migration (TRYAGAIN, ASK, MOVED), or the test proves
// nothing.
func Reshard(t *testing.T, top Topology, moves int) {
	if testing.Short() {
		t.Skip("a Cluster resharded under traffic: run without -short")
	}
	c := redistest.StartCluster(t, 3, 0)
	const name = "reshard"
	slot := c.KeySlot(t, "locktag:{"+name+"}")
	from := c.MasterOf(t, slot)
	var to *redistest.Server
	for _, m := range c.Masters(t) {
		if m != from {
			to = m
			break
		}
	}
	// Other data in the slot, so that each move takes a while and the
	// lock's keys are split between the masters for part of it.
	for i := range 300 {
		if _, err := from.Do("SET", fmt.Sprintf("{%s}:data:%d", name, i), i); err != nil {
			t.Fatal(err)
		}
	}
	var logs logtest.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// A move holds a call back for as long as the lock's keys are split,
	// a few hundred milliseconds here; a hand-over's grant window longer
	// than that keeps a grant whose holder's release is held back from
	// lapsing (it would pass the lock on safely, and the late Release
	// would say ErrNotHeld).
	opts := []locker.Option{locker.WithLogger(logger), locker.WithGrantWindow(time.Second)}
	lks := []*locker.Locker{top.Cluster(t, c, opts...), top.Cluster(t, c, opts...)}
	raw := top.ClusterDriver(t, c)

	var inside, overlaps, granted, failedReleases, gaveUp, errs, controlMoving atomic.Int64
	var firstErr atomic.Value
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, lk := range lks {
		for range 4 {
			wg.Go(func() {
				for ctx.Err() == nil {
					began := time.Now()
					le, err := lk.Obtain(ctx, name, locker.Params{TTL: 2 * time.Second, Wait: 2 * time.Second})
					took := time.Since(began)
					switch {
					case err == nil:
					case ctx.Err() != nil:
						return
					case errors.Is(err, locker.ErrNotObtained):
						gaveUp.Add(1)
						continue
					default:
						errs.Add(1)
						firstErr.CompareAndSwap(nil, err)
						continue
					}
					granted.Add(1)
					if inside.Add(1) > 1 {
						overlaps.Add(1)
					}
					time.Sleep(time.Millisecond) // the work under the lock
					inside.Add(-1)
					rb := time.Now()
					if err := le.Release(context.Background()); err != nil {
						failedReleases.Add(1)
						firstErr.CompareAndSwap(nil, err)
						t.Logf("release: %v (Obtain took %v, Release %v)", err, took, time.Since(rb))
					}
				}
			})
		}
	}
	probe := driver.NewScript("return {redis.call('EXISTS', KEYS[1]), redis.call('EXISTS', KEYS[2])}")
	wg.Go(func() {
		keys := driver.NewKeys("locktag:{"+name+"}", "locktag:{"+name+"}:q")
		for ctx.Err() == nil {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := raw.Eval(cctx, probe, keys)
			cancel()
			if err != nil && ctx.Err() == nil {
				msg := err.Error()
				if strings.HasPrefix(msg, "TRYAGAIN") || strings.HasPrefix(msg, "MOVED") || strings.HasPrefix(msg, "ASK") {
					controlMoving.Add(1)
				}
			}
		}
	})
	began := time.Now()
	for i := range moves {
		if err := c.MoveSlot(slot, from, to, 5); err != nil {
			stop()
			wg.Wait()
			t.Fatalf("move %d of slot %d: %v", i+1, slot, err)
		}
		from, to = to, from
		time.Sleep(50 * time.Millisecond) // traffic on the settled slot before the next move
	}
	t.Logf("moves took %v", time.Since(began))
	stop()
	wg.Wait()
	t.Logf("slot %d moved %d times: %d grants, %d overlaps, %d failed releases, %d errors, %d gave up; control: %d calls met the migration",
		slot, moves, granted.Load(), overlaps.Load(), failedReleases.Load(), errs.Load(), gaveUp.Load(), controlMoving.Load())
	if e := firstErr.Load(); e != nil {
		t.Logf("first error: %v", e)
	}
	if overlaps.Load() != 0 || failedReleases.Load() != 0 || errs.Load() != 0 || gaveUp.Load() != 0 {
		t.Errorf("resharding cost %d overlaps, %d failed releases, %d errors, %d callers giving up; logs:\n%s",
			overlaps.Load(), failedReleases.Load(), errs.Load(), gaveUp.Load(), logs.String())
	}
	if granted.Load() < int64(moves) {
		t.Errorf("only %d grants in %d moves", granted.Load(), moves)
	}
	if controlMoving.Load() == 0 {
		t.Error("control: no call through the driver alone met the migration: the test shows nothing")
	}
}
