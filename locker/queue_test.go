package locker_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// TestGhostGrantHandedOn: waiters of a Locker that lost Redis (so their
// give-up never arrived) are queued first when the holder releases. The
// lock (a permit, a read/write hold) goes to the first of them for one
// grant window only; the live waiter's re-check, timed by the grant's
// notice rather than by the previous holder's 30s lease, hands it on and
// cuts off the ghost Locker's other entries ("!sid"), so those are never
// granted: the ghosts cost one grant window, not one per ghost. (Before
// the cut-off reached semaphores and read/write locks, each ghost there
// was granted in turn.)
func TestGhostGrantHandedOn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		base   string // the kind's keys: locktag:{k}<suffix>
		holder locker.Params
		ghost  locker.Params
		live   locker.Params
	}{
		{"mutex", "", locker.Params{}, locker.Params{}, locker.Params{}},
		{"semaphore", ":s", locker.Params{Limit: 1}, locker.Params{Limit: 1}, locker.Params{Limit: 1}},
		{"rw-write", ":rw", locker.Params{Mode: locker.Write}, locker.Params{Mode: locker.Write}, locker.Params{Mode: locker.Read}},
		// Ghost readers behind a writer are admitted together (one batch,
		// three grants) and lapse together: still one window, one cut-off.
		{"rw-read", ":rw", locker.Params{Mode: locker.Write}, locker.Params{Mode: locker.Read}, locker.Params{Mode: locker.Write}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			ctx := context.Background()
			base := "locktag:{g}" + tc.base
			live := newLocker(t, srv)
			kd := &flaky{Driver: redigo.New(srv.Pool(t))}
			ghosts := newLockerOn(t, kd)
			msgs := srv.Messages(t, base+":c")
			queued := func() int64 { return intReply(t, srv, "ZCARD", base+":q") }

			holder := mustObtain(t, live, ctx, "g", tc.holder) // watchdog: a 30s lease
			gctx, gcancel := context.WithCancel(ctx)
			var gone sync.WaitGroup
			const nGhosts = 3
			for i := range nGhosts {
				gone.Go(func() {
					p := tc.ghost
					p.TTL, p.Wait = 2*time.Second, time.Minute
					if _, err := ghosts.Obtain(gctx, "g", p); err == nil {
						t.Error("a ghost obtained the lock")
					}
				})
				eventually(t, 5*time.Second, "ghost queued", func() bool { return queued() == int64(i+1) })
			}
			got := make(chan *locker.Lease, 1)
			go func() {
				p := tc.live
				p.Wait = 20 * time.Second
				le, err := live.Obtain(ctx, "g", p)
				if err != nil {
					t.Error(err)
				}
				got <- le
			}()
			eventually(t, 5*time.Second, "live waiter queued", func() bool { return queued() == nGhosts+1 })
			kd.down.Store(true)
			gcancel()
			gone.Wait()
			if n := queued(); n != nGhosts+1 {
				t.Fatalf("queue length %d after the ghosts gave up unheard, want %d", n, nGhosts+1)
			}

			released := time.Now()
			if err := holder.Release(ctx); err != nil {
				t.Fatal(err)
			}
			var le *locker.Lease
			select {
			case le = <-got:
			case <-time.After(15 * time.Second):
				t.Fatal("the live waiter did not get the lock (ghost grants held it)")
			}
			if le == nil {
				t.FailNow()
			}
			defer func() { _ = le.Release(ctx) }()
			t.Logf("obtained %v after the release (grant window 250ms; previous holder's lease 30s)", time.Since(released).Round(time.Millisecond))

			eventually(t, 5*time.Second, "cut-off notice", func() bool {
				for _, m := range msgs() {
					if strings.HasPrefix(m, "!") {
						return true
					}
				}
				return false
			})
			holders := holderTokens(t, srv, base, tc.base == "")
			var ghostGrants, cutOffs int
			for _, m := range msgs() {
				if strings.HasPrefix(m, "!") {
					cutOffs++
				}
				// A grant: token fence server_ms pttl_ms.
				if f := strings.Fields(m); len(f) == 4 && !slices.Contains(holders, f[0]) {
					ghostGrants++
				}
			}
			want := 1
			if tc.ghost.Mode == locker.Read {
				want = nGhosts // one batch of readers
			}
			if ghostGrants != want || cutOffs != 1 {
				t.Fatalf("%d grants to ghosts, %d cut-off notices; want %d and 1 (messages %q)", ghostGrants, cutOffs, want, msgs())
			}
		})
	}
}

// holderTokens lists the owner tokens holding the lock whose main key is
// base: a mutex's one owner, or the members of a semaphore's or read/write
// lock's holder set.
func holderTokens(t *testing.T, srv *redistest.Server, base string, mutex bool) []string {
	t.Helper()
	if mutex {
		v, _ := redis.String(srv.Do("GET", base))
		return strings.Fields(v)[:1]
	}
	hs, err := redis.Strings(srv.Do("ZRANGE", base, 0, -1))
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

// TestGrantConfirmed: a holder handed the lock by a release, whose work
// outlasts the grant window, keeps it: its first renewal confirms the grant
// to its own terms (a fixed TTL here), so the lock does not lapse.
func TestGrantConfirmed(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	lk := newLocker(t, srv, locker.WithGrantWindow(60*time.Millisecond))
	holder := mustObtain(t, lk, ctx, "c", locker.Params{TTL: 10 * time.Second})
	got := make(chan *locker.Lease, 1)
	go func() {
		le, err := lk.Obtain(ctx, "c", locker.Params{TTL: 5 * time.Second, Wait: 10 * time.Second})
		if err != nil {
			t.Error(err)
		}
		got <- le
	}()
	eventually(t, 5*time.Second, "waiter queued", func() bool { return queueLen(t, srv, "c") == 1 })
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	le := <-got
	if le == nil {
		t.FailNow()
	}
	// Past the window, the lease in Redis is the holder's own.
	eventually(t, 5*time.Second, "grant confirmed", func() bool {
		return intReply(t, srv, "PTTL", "locktag:{c}") > 1000
	})
	if le.Lost() {
		t.Fatal("lease lost after its grant was confirmed")
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLateGrantIsNotObtained: a lock granted for a lease that ended before
// the reply arrived (Redis paused longer than the TTL) fails with an error
// that reads as busy (ErrNotObtained, ErrGrantExpired), not as Redis being down.
func TestLateGrantIsNotObtained(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	warmListener(t, lk)
	if _, err := srv.Do("CLIENT", "PAUSE", "150", "ALL"); err != nil {
		t.Fatal(err)
	}
	_, err := lk.Obtain(context.Background(), "late", locker.Params{TTL: 20 * time.Millisecond})
	if !errors.Is(err, locker.ErrGrantExpired) || !errors.Is(err, locker.ErrNotObtained) {
		t.Fatalf("err = %v, want ErrGrantExpired and ErrNotObtained", err)
	}
	if errors.Is(err, locker.ErrUnavailable) {
		t.Fatalf("err = %v matches ErrUnavailable: Redis was healthy", err)
	}
}

// TestUnsentCallSendsNoCleanup: an Obtain whose call never reached Redis
// (no connection could be had) fails with ErrUnavailable and ErrNotSent,
// and sends no clean-up: a burst of such failures must not turn into a
// burst of dials.
func TestUnsentCallSendsNoCleanup(t *testing.T) {
	var dials atomic.Int32
	pool := &redis.Pool{Dial: func() (redis.Conn, error) {
		dials.Add(1)
		return nil, errors.New("test: connection refused")
	}}
	lk := newLockerOn(t, redigo.New(pool), locker.WithCallTimeout(20*time.Millisecond))
	defer lk.Close()
	_, err := lk.Obtain(context.Background(), "k", locker.Params{Wait: time.Second})
	if !errors.Is(err, locker.ErrUnavailable) || !errors.Is(err, locker.ErrNotSent) {
		t.Fatalf("err = %v, want ErrUnavailable and ErrNotSent", err)
	}
	// A negative check: a clean-up would dial now and once more a call
	// timeout later, so give it five.
	time.Sleep(100 * time.Millisecond)
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d dials, want 1 (no clean-up for a call never sent)", n)
	}
}
