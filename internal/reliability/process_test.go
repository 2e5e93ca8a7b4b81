package reliability

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/reliability/faults"
	"github.com/locktag/locktag/locker"
)

// holderChild starts a child process that takes lock key with a watchdog
// lease (of e's kind) and reads the store at storeURL ("": none); it
// returns the child and its fencing token.
func holderChild(t *testing.T, srv *redistest.Server, storeURL, key string, lease time.Duration, e childEnv) (*faults.Child, int64) {
	t.Helper()
	e.addr, e.store, e.key, e.lease, e.renew = srv.Addr(), storeURL, key, lease, lease/5
	ch := faults.StartChild(t, "holder", e.env()...)
	tok, err := strconv.ParseInt(ch.Expect("HELD", 30*time.Second), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	ch.Expect("READ", 10*time.Second)
	return ch, tok
}

// TestHolderKilled: a holder process SIGKILLed while it holds a watchdog
// lock (no release, no more renewals) blocks the key for at most its lease;
// a waiter that queued before the crash gets the lock with a larger token,
// and nothing is left behind. So for every kind: a killed reader blocks a
// writer, and a killed semaphore holder its permit, for at most the
// reader's or permit's own lease. (locker's TestHolderCrash simulates the
// crash by closing a pool inside one process; here the process really
// dies.)
//
// The control keeps the holder alive: the same waiter, waiting as long as
// the bound, does not get the lock (the watchdog renews past the lease), so
// it is the crash that frees the lock within the bound.
func TestHolderKilled(t *testing.T) {
	srv := redistest.Start(t)
	const lease, slack = time.Second, 1500 * time.Millisecond // slack: timers on a loaded 2-core machine
	for _, tc := range []struct {
		name   string
		suffix string // the kind's keys: locktag:{key}<suffix>
		holder childEnv
		waiter locker.Params
		store  bool // the holder reads a fenced store (a fenced kind)
	}{
		{"mutex", "", childEnv{}, locker.Params{}, true},
		{"read", ":rw", childEnv{mode: "read"}, locker.Params{Mode: locker.Write}, false},
		{"semaphore", ":s", childEnv{limit: 1}, locker.Params{Limit: 1}, false},
	} {
		for _, crash := range []bool{true, false} {
			name := tc.name
			if !crash {
				name += "-control"
			}
			t.Run(name, func(t *testing.T) {
				key := "crash-" + name
				base := "locktag:{" + key + "}" + tc.suffix
				var storeURL string
				if tc.store {
					storeURL = newStore(true).serve(t)
				}
				ch, tok := holderChild(t, srv, storeURL, key, lease, tc.holder)

				lk := newLocker(t, srv.Pool(t))
				type result struct {
					le  *locker.Lease
					err error
				}
				got := make(chan result, 1)
				go func() {
					p := tc.waiter
					p.Wait = 20 * time.Second
					if !crash {
						p.Wait = lease + slack
					}
					le, err := lk.Obtain(context.Background(), key, p)
					got <- result{le, err}
				}()
				eventually(t, 10*time.Second, "waiter queued", func() bool {
					n, _ := redis.Int(srv.Do("ZCARD", base+":q"))
					return n == 1
				})
				if !crash {
					r := within(t, 20*time.Second, "the waiter's wait ended", got)
					if !errors.Is(r.err, locker.ErrNotObtained) {
						t.Fatalf("control: the holder alive, the waiter got %v within %v, want ErrNotObtained", r.err, lease+slack)
					}
					ch.Send("release")
					if r := ch.Expect("RELEASED", 10*time.Second); r != "ok" {
						t.Fatalf("control: the holder's release: %s", r)
					}
					return
				}
				killed := time.Now()
				ch.Kill()
				r := within(t, 20*time.Second, "waiter obtained after the crash", got)
				if r.err != nil {
					t.Fatal(r.err)
				}
				le := r.le
				if d := time.Since(killed); d > lease+slack {
					t.Fatalf("next holder waited %v after the crash; lease %v", d, lease)
				}
				t.Logf("next holder got the lock %v after the crash (lease %v)", time.Since(killed).Round(time.Millisecond), lease)
				if le.Token() <= tok {
					t.Fatalf("token %d after the crashed holder's %d", le.Token(), tok)
				}
				if err := le.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
				if n := exists(t, srv, base, base+":q"); n != 0 {
					t.Fatalf("%d keys left behind", n)
				}
			})
		}
	}
}

// TestHolderPaused: a holder process SIGSTOPped for twice its lease (a
// long GC pause, a frozen VM) loses the lock; another client takes it with
// a larger token and writes. After SIGCONT the paused holder — a careless
// one that writes without looking at its context — has its stale write
// refused by the fenced store, and within a lease of resuming its lease's
// context is cancelled with ErrLockLost. No update is lost.
//
// The control run uses a store without fencing: the same resumed write is
// applied and the store counts the lost update, so the check can fail.
//
// What is not promised: the resumed process may run some code before its
// timers fire; the lost-lock detection runs on timers inside the stopped
// process, so only fencing can stop a write already under way, and the
// write may even return before the first renewal after resuming.
func TestHolderPaused(t *testing.T) {
	srv := redistest.Start(t)
	for _, fenced := range []bool{true, false} {
		t.Run(fmt.Sprintf("fenced=%t", fenced), func(t *testing.T) {
			key := fmt.Sprintf("paused-%t", fenced)
			st := newStore(fenced)
			const lease = 600 * time.Millisecond
			ch, tok := holderChild(t, srv, st.serve(t), key, lease, childEnv{})

			ch.Stop()
			time.Sleep(2 * lease) // the fault: the holder is frozen for two leases

			lk := newLocker(t, srv.Pool(t))
			le, err := lk.Obtain(context.Background(), key, locker.Params{Wait: 10 * time.Second})
			if err != nil {
				t.Fatalf("the lock of a frozen holder was not taken over: %v", err)
			}
			if le.Token() <= tok {
				t.Fatalf("new token %d not above the frozen holder's %d", le.Token(), tok)
			}
			v, err := st.Read(context.Background(), key, le.Token())
			if err == nil {
				err = st.Write(context.Background(), key, le.Token(), v, v+1)
			}
			if err != nil {
				t.Fatal(err)
			}

			ch.Cont()
			ch.Send("write")
			wrote := ch.Expect("WROTE", 10*time.Second)
			cause := ch.Expect("CAUSE", 10*time.Second)
			ch.Send("release")
			released := ch.Expect("RELEASED", 10*time.Second)
			if err := le.Release(context.Background()); err != nil {
				t.Fatalf("new holder's release: %v", err)
			}
			value, writes, lost, stale := st.stats(key)
			t.Logf("resumed holder: wrote %q, cause %q, release %q; store value %d, writes %d, lost %d, stale %d", wrote, cause, released, value, writes, lost, stale)

			if cause != locker.ErrLockLost.Error() {
				t.Errorf("resumed holder's context cause %q, want %q", cause, locker.ErrLockLost)
			}
			if released != locker.ErrNotHeld.Error() {
				t.Errorf("resumed holder's release: %q, want %q", released, locker.ErrNotHeld)
			}
			if owner(t, srv, key) != "" {
				t.Error("lock still held after both releases")
			}
			if fenced {
				if wrote != "stale" || lost != 0 || stale != 1 || value != 1 {
					t.Fatalf("fencing: wrote %q, lost %d, stale %d, value %d; want stale, 0, 1, 1", wrote, lost, stale, value)
				}
			} else if wrote != "ok" || lost != 1 {
				t.Fatalf("control without fencing: wrote %q, lost %d; want the stale write applied and counted as a lost update", wrote, lost)
			}
		})
	}
}

// TestRestartWithoutPersistence: redis-server restarted (no RDB, no AOF)
// while a watchdog lock is held. The lock is gone from Redis at once, so
// another client can take it before the holder notices: the new token is
// still larger (the counter is re-seeded from the server clock), the old
// holder's write is refused by fencing, and the old holder learns it lost
// the lock (renewal refused) within its lease.
func TestRestartWithoutPersistence(t *testing.T) {
	srv := redistest.Start(t)
	st := newStore(true)
	const lease, slack = time.Second, 1500 * time.Millisecond
	old := newLocker(t, srv.Pool(t), locker.WithWatchdog(lease, lease/5), locker.WithCallTimeout(500*time.Millisecond))
	le1, err := old.Obtain(context.Background(), "restart", locker.Params{})
	if err != nil {
		t.Fatal(err)
	}
	v1, err := st.Read(context.Background(), "restart", le1.Token())
	if err != nil {
		t.Fatal(err)
	}

	srv.Restart()
	restarted := time.Now()

	lk := newLocker(t, srv.Pool(t))
	var le2 *locker.Lease
	eventually(t, 10*time.Second, "lock taken after the restart", func() bool {
		le2, err = lk.Obtain(context.Background(), "restart", locker.Params{})
		return err == nil
	})
	if le2.Token() <= le1.Token() {
		t.Fatalf("fencing token went from %d to %d across the restart", le1.Token(), le2.Token())
	}
	v2, err := st.Read(context.Background(), "restart", le2.Token())
	if err == nil {
		err = st.Write(context.Background(), "restart", le2.Token(), v2, v2+1)
	}
	if err != nil {
		t.Fatal(err)
	}
	// Whether or not the old holder has noticed yet, its write is refused.
	if err := st.Write(context.Background(), "restart", le1.Token(), v1, v1+1); !errors.Is(err, errStale) {
		t.Fatalf("old holder's write after the restart: %v, want stale", err)
	}
	select {
	case <-le1.Context().Done():
	case <-time.After(lease + slack):
		t.Fatal("old holder did not learn it lost the lock")
	}
	if d := time.Since(restarted); d > lease+slack {
		t.Errorf("loss noticed %v after the restart; lease %v", d, lease)
	}
	if c := context.Cause(le1.Context()); !errors.Is(c, locker.ErrLockLost) {
		t.Fatalf("cause %v, want ErrLockLost", c)
	}
	if err := le1.Release(context.Background()); !errors.Is(err, locker.ErrNotHeld) {
		t.Fatalf("old holder's release: %v, want ErrNotHeld", err)
	}
	// The old holder's release must not have freed the new holder's lock.
	if owner(t, srv, "restart") == "" {
		t.Fatal("the old holder's release deleted the new holder's lock")
	}
	if err := le2.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, lost, _ := st.stats("restart"); lost != 0 {
		t.Fatalf("%d lost updates", lost)
	}
}
