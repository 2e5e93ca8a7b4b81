package locker_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// TestOwnHandOverUntold: a release that hands a lock (a mutex, a permit,
// a write hold) to a waiter of the same Locker wakes it from its reply and
// publishes no grant notice; a hand-over to another Locker's waiter
// (another process) is published. The two-Locker runs are the control:
// they show the count sees the notices.
func TestOwnHandOverUntold(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	one, other := newLocker(t, srv), newLocker(t, srv)
	for _, kind := range []struct {
		name string
		p    locker.Params
	}{
		{"mutex", locker.Params{}},
		{"semaphore", locker.Params{Limit: 2}},
		{"write", locker.Params{Mode: locker.Write}},
	} {
		for _, tc := range []struct {
			name    string
			lockers []*locker.Locker
			ok      func(acq, published int) bool
			want    string
		}{
			{"one Locker", []*locker.Locker{one}, func(acq, pub int) bool { return pub*10 <= acq }, "at most one notice per 10 acquisitions"},
			{"two Lockers", []*locker.Locker{one, other}, func(acq, pub int) bool { return pub*8 >= acq }, "a notice for at least one acquisition in 8"},
		} {
			t.Run(kind.name+"/"+tc.name, func(t *testing.T) {
				const workers, rounds = 8, 10
				key := kind.name + "/" + tc.name
				p := kind.p
				p.TTL, p.Wait = 10*time.Second, 10*time.Second
				srvs := []*redistest.Server{srv}
				before := commandStats(t, srvs)["publish"]
				var wg sync.WaitGroup
				for i := range workers {
					lk := tc.lockers[i%len(tc.lockers)]
					wg.Go(func() {
						for range rounds {
							le, err := lk.Obtain(ctx, key, p)
							if err != nil {
								t.Error(err)
								return
							}
							time.Sleep(time.Millisecond) // the work
							if err := le.Release(ctx); err != nil {
								t.Error(err)
							}
						}
					})
				}
				wg.Wait()
				pub := commandStats(t, srvs)["publish"] - before
				t.Logf("%d acquisitions, %d notices published", workers*rounds, pub)
				if !tc.ok(workers*rounds, pub) {
					t.Errorf("%d notices for %d acquisitions, want %s", pub, workers*rounds, tc.want)
				}
			})
		}
	}
}

// TestOwnHandOverReplyLost: a release whose reply is lost (its call gave
// up while Redis was stopped, on a pipelined connection that outlives
// the stop) may have handed the lock to a waiter of the same Locker,
// which no notice then tells: the waiter asks Redis, and gets the lock
// long before its wait or the old lease would end. The release runs when
// Redis resumes; the waiter's first question may run before it.
func TestOwnHandOverReplyLost(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	lk := newLockerOn(t, redigo.New(srv.Pool(t), redigo.WithStallTimeout(time.Minute)),
		locker.WithCallTimeout(300*time.Millisecond))
	const key = "reply-lost"
	// Load the release script: a stopped Redis would answer the first
	// call NOSCRIPT, long after it gave up.
	if err := mustObtain(t, lk, ctx, "warm-up", locker.Params{TTL: time.Minute}).Release(ctx); err != nil {
		t.Fatal(err)
	}
	holder := mustObtain(t, lk, ctx, key, locker.Params{TTL: time.Minute})
	if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	type result struct {
		le  *locker.Lease
		err error
	}
	got := make(chan result, 1)
	go func() {
		le, err := lk.Obtain(ctx, key, locker.Params{TTL: time.Minute, Wait: 20 * time.Second})
		got <- result{le, err}
	}()
	eventually(t, 10*time.Second, "the waiter queued and listening", func() bool {
		if !queuedListening(t, srv, key) {
			return false
		}
		calls := commandStats(t, []*redistest.Server{srv})
		return calls["evalsha"]+calls["eval"] >= 2 // its try and its first re-check
	})
	srv.Freeze()
	err := holder.Release(ctx)
	srv.Thaw()
	if err == nil {
		t.Fatal("Release answered while Redis was stopped")
	}
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("the waiter: %v", r.err)
		}
		if err := r.le.Release(ctx); err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not get the lock within 10s (its wait is 20s, the old lease 1 min)")
	}
}

// TestOwnHandOverManyReaders: a writer's release admits every queued
// reader of its Locker at once; its reply carries all their grants, and
// each reader is woken by it (no notice is published), long before the
// readers' wait or the writer's lease would end.
func TestOwnHandOverManyReaders(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	lk := newLocker(t, srv)
	const key, readers = "many-readers", 3
	writer := mustObtain(t, lk, ctx, key, locker.Params{TTL: time.Minute, Mode: locker.Write})
	got := make(chan error, readers)
	for range readers {
		go func() {
			le, err := lk.Obtain(ctx, key, locker.Params{TTL: time.Minute, Wait: 20 * time.Second, Mode: locker.Read})
			if err == nil {
				err = le.Release(ctx)
			}
			got <- err
		}()
	}
	eventually(t, 10*time.Second, "the readers queued", func() bool {
		return intReply(t, srv, "ZCARD", "locktag:{"+key+"}:rw:q") == readers
	})
	srvs := []*redistest.Server{srv}
	before := commandStats(t, srvs)["publish"]
	if err := writer.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range readers {
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("reader: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d readers got the lock within 10s (their wait is 20s, the writer's lease 1 min)", i, readers)
		}
	}
	if pub := commandStats(t, srvs)["publish"] - before; pub != 0 {
		t.Errorf("%d notices published, want none", pub)
	}
}

// TestOwnHandOverWholeLease: a release hands the lock to a waiter of its
// own Locker for the waiter's whole lease, since that waiter's process is
// alive (it is releasing) and wakes it from the reply, however late; a
// waiter of another Locker (process) gets the grant window, which it
// confirms with its first renewal. Read at once after the release, well
// before that renewal (a third into a 6s window).
func TestOwnHandOverWholeLease(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	window := locker.WithGrantWindow(6 * time.Second)
	releaser, other := newLocker(t, srv, window), newLocker(t, srv, window)
	for _, tc := range []struct {
		name   string
		waiter *locker.Locker
		ok     func(pttl time.Duration) bool
		want   string
	}{
		{"own Locker", releaser, func(d time.Duration) bool { return d > 30*time.Second }, "the whole lease (1 min)"},
		{"another Locker", other, func(d time.Duration) bool { return d > 0 && d <= 6*time.Second }, "the grant window (6s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "whole-lease/" + tc.name
			p := locker.Params{TTL: time.Minute, Wait: 20 * time.Second}
			holder := mustObtain(t, releaser, ctx, key, p)
			got := make(chan *locker.Lease, 1)
			go func() {
				le, err := tc.waiter.Obtain(ctx, key, p)
				if err != nil {
					t.Error(err)
				}
				got <- le
			}()
			eventually(t, 10*time.Second, "the waiter queued and listening", func() bool {
				return queuedListening(t, srv, key)
			})
			if err := holder.Release(ctx); err != nil {
				t.Fatal(err)
			}
			st, err := releaser.Inspect(ctx, key)
			if err != nil || len(st.Holders) != 1 {
				t.Fatalf("Inspect: %+v, %v; want one holder", st, err)
			}
			if pttl := st.Holders[0].LeaseLeft; !tc.ok(pttl) {
				t.Errorf("the waiter's grant: %v left, want %s", pttl, tc.want)
			}
			if le := <-got; le != nil {
				if err := le.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// queuedListening reports whether one waiter is queued for the mutex key
// and one subscriber listens on its channel.
func queuedListening(t *testing.T, srv *redistest.Server, key string) bool {
	if queueLen(t, srv, key) != 1 {
		return false
	}
	subs, err := redis.Values(srv.Do("PUBSUB", "NUMSUB", "locktag:{"+key+"}:c"))
	return err == nil && len(subs) == 2 && subs[1].(int64) == 1
}
