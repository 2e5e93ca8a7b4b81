package locker_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

// lateRecheckDriver delays the reply of one queued waiter's re-check (an
// acquire script in mode "r" that obtained the lock) once armed, by delay: a reply that arrives
// after the lease it grants has ended, as in a starved or paused process.
type lateRecheckDriver struct {
	driver.Driver
	delay time.Duration
	armed atomic.Bool
	fired atomic.Bool
}

func (d *lateRecheckDriver) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	v, err := d.Driver.Eval(ctx, s, keys, args...)
	if len(args) > 3 && args[3] == "r" && strings.Contains(s.Source(), "acquire: take") && granted(v) && d.armed.CompareAndSwap(true, false) {
		time.Sleep(d.delay) // the fault: the reply is late
		d.fired.Store(true)
	}
	return v, err
}

// granted reports whether an acquire script's reply v says obtained.
func granted(v any) bool {
	r, ok := v.([]any)
	return ok && len(r) > 0 && r[0] == int64(1)
}

// TestLateRecheckKeepsWaiting: a queued waiter whose re-check is granted
// the lock, but whose reply arrives after that grant's lease ended (its
// process too slow to take the grant up), does not fail as busy long
// before its wait: the late grant is handed back and the waiter queues
// again, and obtains the lock within its wait. For every kind. (Found by
// the kinds' burst in internal/reliability: under a flash-sale burst on a
// loaded machine, waiters with minutes of wait left failed with ErrLate
// after about a second.)
func TestLateRecheckKeepsWaiting(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		holder locker.Params
		waiter locker.Params
	}{
		{"mutex", locker.Params{}, locker.Params{}},
		{"semaphore", locker.Params{Limit: 1}, locker.Params{Limit: 1}},
		{"write", locker.Params{Mode: locker.Read}, locker.Params{Mode: locker.Write}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "late-recheck-" + tc.name
			d := &lateRecheckDriver{Driver: redigo.New(srv.Pool(t)), delay: 400 * time.Millisecond}
			lk := newLockerOn(t, d)
			// The holder's fixed lease ends unreleased: the waiter's safety
			// re-check at its end is granted the lock (for the waiter's
			// TTL, shorter than the delayed reply).
			h := tc.holder
			h.TTL = 300 * time.Millisecond
			mustObtain(t, newLocker(t, srv), ctx, key, h)
			d.armed.Store(true)
			w := tc.waiter
			w.TTL, w.Wait = 200*time.Millisecond, 20*time.Second
			start := time.Now()
			le, err := lk.Obtain(ctx, key, w)
			if !d.fired.Load() {
				t.Fatalf("no re-check reply was delayed (err %v): the test did not reach its case", err)
			}
			if err != nil {
				t.Fatalf("after a late re-check reply the waiter failed after %v of its %v wait: %v", time.Since(start).Round(time.Millisecond), w.Wait, err)
			}
			_ = le.Release(ctx) // its 200ms lease may have ended on a loaded machine
		})
	}
}
