package locker_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

// gatedTriesDriver holds back the replies of first tries (acquire scripts
// in mode "a") until open is closed — as a pipelined connection busy
// writing a burst's calls reads no reply until the burst is written —
// and counts queued waiters' re-checks (mode "r"). With only set, only
// that try (counted from 1) is held back.
type gatedTriesDriver struct {
	driver.Driver
	only     int32
	open     chan struct{}
	tried    atomic.Int32
	rechecks atomic.Int32
}

func (d *gatedTriesDriver) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	v, err := d.Driver.Eval(ctx, s, keys, args...)
	if len(args) > 3 && isAcquire(s) {
		switch args[3] {
		case "a":
			if n := d.tried.Add(1); d.only == 0 || n == d.only {
				<-d.open
			}
		case "r":
			d.rechecks.Add(1)
		}
	}
	return v, err
}

// TestBurstWaitersSubscribeEarly: when waiting calls arrive together at a
// held lock, the second one subscribes the key's channel while the tries
// are on their way, so a waiter whose try went out after the subscription
// was confirmed does not re-check once its busy reply arrives: a burst
// costs a re-check for the waiters that tried before, not one per waiter
// (each an extra script call, queued ahead of the hand-overs). Every
// waiter is then served.
func TestBurstWaitersSubscribeEarly(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	const key, n = "burst-early", 20
	holder := mustObtain(t, newLocker(t, srv), ctx, key, locker.Params{TTL: time.Minute})
	d := &gatedTriesDriver{Driver: redigo.New(srv.Pool(t)), open: make(chan struct{})}
	lk := newLockerOn(t, d)
	errs := make(chan error, n)
	arrive := func() {
		go func() {
			le, err := lk.Obtain(ctx, key, locker.Params{TTL: time.Minute, Wait: time.Minute})
			if err == nil {
				err = le.Release(ctx)
			}
			errs <- err
		}()
	}
	arrive()
	arrive()
	eventually(t, promptly, "two tries sent", func() bool { return d.tried.Load() == 2 })
	eventually(t, promptly, "the key's channel subscribed while the tries wait for their replies", func() bool {
		return numsub(t, srv, "locktag:{"+key+"}:c") == 1
	})
	for range n - 2 {
		arrive()
	}
	eventually(t, promptly, "every try sent", func() bool { return d.tried.Load() == n })
	close(d.open)
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := testwait.Recv(t, errs, "a waiter's Obtain and Release"); err != nil {
			t.Fatal(err)
		}
	}
	if r := d.rechecks.Load(); r > 2 {
		t.Errorf("%d of %d waiters re-checked; want at most the 2 whose tries went out before the channel was subscribed", r, n)
	}
}

// TestCutOffBeforeJoinRechecks: a waiter whose try went out after its
// key's channel was subscribed, and whose queue entry was cut off (a grant
// to another of its Locker's waiters lapsed) before it queued locally to
// hear the notice ("!sid"), re-checks when it joins, which queues it
// again: it is served, not left waiting with no queue entry until the
// key's safety re-check.
func TestCutOffBeforeJoinRechecks(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	const key = "cut-before-join"
	queue, channel := "locktag:{"+key+"}:q", "locktag:{"+key+"}:c"
	// The holder's release grants for 50ms: the ghost below lets it lapse.
	holder := mustObtain(t, newLocker(t, srv, locker.WithGrantWindow(50*time.Millisecond)), ctx, key, locker.Params{TTL: time.Minute})
	d := &gatedTriesDriver{Driver: redigo.New(srv.Pool(t)), only: 3, open: make(chan struct{})}
	lk := newLockerOn(t, d)
	errs := make(chan error, 4)
	arrive := func() {
		go func() {
			le, err := lk.Obtain(ctx, key, locker.Params{TTL: time.Minute, Wait: time.Minute})
			if err == nil {
				err = le.Release(ctx)
			}
			errs <- err
		}()
	}
	served := func(what string) {
		t.Helper()
		if err := testwait.Recv(t, errs, what); err != nil {
			t.Fatal(err)
		}
	}
	arrive()
	arrive()
	eventually(t, promptly, "two waiters queued", func() bool { return zcard(t, srv, queue) == 2 && numsub(t, srv, channel) == 1 })
	arrive() // the third: its busy reply is held back, so it has not joined locally
	eventually(t, promptly, "the third queued", func() bool { return zcard(t, srv, queue) == 3 })
	v, err := srv.Do("ZRANGE", queue, 0, 0, "WITHSCORES")
	es, _ := v.([]any)
	if err != nil || len(es) != 2 {
		t.Fatalf("queue head: %v %v", v, err)
	}
	head, _ := es[0].([]byte)
	score, err := strconv.ParseInt(string(es[1].([]byte)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	sid := strings.Fields(string(head))[3] // token wait ttl sid
	// A ghost waiter of lk's, queued first (a score is the arrival, µs), is
	// granted the lock on release and never takes it up: its grant lapses,
	// and the first waiter's safety re-check then cuts off every entry of
	// lk's. The two that joined hear the notice, queue again and are served.
	if _, err := srv.Do("ZADD", queue, score-1, "ghost 60000 60000 "+sid); err != nil {
		t.Fatal(err)
	}
	notices := srv.Messages(t, channel)
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	served("a joined waiter")
	served("a joined waiter")
	if !slices.Contains(notices(), "!"+sid) {
		t.Fatalf("no cut-off notice (%q): the test did not reach its case", notices())
	}
	// Another holder, and a fourth waiter whose busy reply moves the key's
	// safety re-check to that holder's lease end, a minute away; its
	// release grants for a minute, so the grant's own moves it no nearer.
	taken := mustObtain(t, newLocker(t, srv, locker.WithGrantWindow(time.Minute)), ctx, key, locker.Params{TTL: time.Minute})
	arrive()
	eventually(t, promptly, "the fourth queued", func() bool { return zcard(t, srv, queue) == 1 })
	close(d.open) // the third joins now
	if err := taken.Release(ctx); err != nil {
		t.Fatal(err)
	}
	served("the fourth waiter")
	served("the third waiter, cut off before it joined")
}

// zcard is the number of members of the sorted set key.
func zcard(t *testing.T, srv *redistest.Server, key string) int64 {
	t.Helper()
	v, err := srv.Do("ZCARD", key)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := v.(int64)
	return n
}
