package locker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/protocol"
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
	if len(args) > 3 && args[3] == "r" && isAcquire(s) && granted(v) && d.armed.CompareAndSwap(true, false) {
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
// loaded machine, waiters with minutes of wait left failed with ErrGrantExpired
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

// slowRecheckDriver holds one queued waiter's re-check (an acquire script
// in mode "r") back by delay before sending it, once armed: a call that
// waited long for a call slot in a starved process. The waiter's clock
// for the reply starts before the wait, so a grant in the reply looks
// late although Redis made it just now.
type slowRecheckDriver struct {
	driver.Driver
	delay time.Duration
	armed atomic.Bool
	fired atomic.Bool
}

func (d *slowRecheckDriver) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	if len(args) > 3 && args[3] == "r" && isAcquire(s) && d.armed.CompareAndSwap(true, false) {
		time.Sleep(d.delay) // the fault: the call waits before it is sent
		d.fired.Store(true)
	}
	return d.Driver.Eval(ctx, s, keys, args...)
}

// TestLateGrantNoticeIgnored: a waiter that hands a late grant back and
// queues again (TestLateRecheckKeepsWaiting) must not take the grant's
// notice, which may still arrive afterwards, for a new grant: the lock has
// gone to the next waiter meanwhile. Here the waiter's re-check is sent
// late, so the grant it finds looks late to it; it hands the lock to the
// waiter queued behind it, which holds it (and releases it at once), and
// only then does the first waiter get the lock, with a larger fencing
// token. Taking the stale notice, it would return the handed-back grant's
// token, smaller than the next holder's: two holders at once.
func TestLateGrantNoticeIgnored(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		p    locker.Params
	}{
		{"mutex", locker.Params{}},
		{"semaphore", locker.Params{Limit: 1}},
		{"write", locker.Params{Mode: locker.Write}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "late-notice-" + tc.name
			h := tc.p
			h.TTL = 300 * time.Millisecond // ends unreleased: the queue's head re-checks then
			mustObtain(t, newLocker(t, srv), ctx, key, h)

			d := &slowRecheckDriver{Driver: redigo.New(srv.Pool(t)), delay: 400 * time.Millisecond}
			first := newLockerOn(t, d)
			warmListener(t, first)
			type result struct {
				le  *locker.Lease
				err error
			}
			firstGot := make(chan result, 1)
			d.armed.Store(true)
			go func() {
				p := tc.p
				p.TTL, p.Wait = 200*time.Millisecond, 20*time.Second
				le, err := first.Obtain(ctx, key, p)
				firstGot <- result{le, err}
			}()
			waitQueued(t, srv, key, tc.name, 1)
			next := newLocker(t, srv)
			p := tc.p
			p.TTL, p.Wait = 10*time.Second, 20*time.Second
			le, err := next.Obtain(ctx, key, p)
			if err != nil {
				t.Fatalf("the next waiter: %v", err)
			}
			nextToken := le.Token()
			if err := le.Release(ctx); err != nil {
				t.Fatal(err)
			}
			var r result
			select {
			case r = <-firstGot:
			case <-time.After(30 * time.Second):
				t.Fatal("the first waiter did not return")
			}
			if !d.fired.Load() {
				t.Fatalf("no re-check was held back (err %v): the test did not reach its case", r.err)
			}
			if r.err != nil {
				t.Fatalf("the first waiter: %v", r.err)
			}
			if r.le.Token() <= nextToken {
				t.Fatalf("the first waiter holds token %d, not above the next holder's %d: it took the notice of the grant it handed back", r.le.Token(), nextToken)
			}
			_ = r.le.Release(ctx)
		})
	}
}

// waitQueued polls until n waiters are queued for key of the kind named
// ("mutex", "semaphore", "write"), or fails t.
func waitQueued(t *testing.T, srv *redistest.Server, key, kind string, n int64) {
	t.Helper()
	q := map[string]string{"mutex": "", "semaphore": ":s", "write": ":rw"}[kind]
	deadline := time.Now().Add(10 * time.Second)
	for intReply(t, srv, "ZCARD", "locktag:{"+key+"}"+q+":q") != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters not queued for %s within 10s", n, key)
		}
		time.Sleep(2 * time.Millisecond) // polling interval
	}
}

// isAcquire reports whether s is the acquire script of a mutex, a
// semaphore or a read/write lock (the scripts a queued waiter re-checks
// with).
func isAcquire(s *driver.Script) bool {
	return protocol.Named(s, "mutex_acquire") || protocol.Named(s, "sem_acquire") || protocol.Named(s, "rw_acquire")
}
