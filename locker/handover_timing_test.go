package locker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/protocol"
	"github.com/locktag/locktag/locker/redigo"
)

// slowTriesDriver sends first tries (acquire scripts in mode "a") delay
// late — a try held up in a burst's queue of calls, long before Redis
// runs it — and counts renewals (mutex_extend).
type slowTriesDriver struct {
	driver.Driver
	delay   time.Duration
	extends atomic.Int32
}

func (d *slowTriesDriver) Eval(ctx context.Context, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	if len(args) > 3 && args[3] == "a" && isAcquire(s) {
		time.Sleep(d.delay) // the fault: the try waits before it is sent
	}
	if protocol.Named(s, "mutex_extend") {
		d.extends.Add(1)
	}
	return d.Driver.Eval(ctx, s, keys, args...)
}

// TestPromptHandOverNotConfirmed: a waiter whose try was held up long
// before Redis ran it, and that is then handed the lock at once, returns
// the grant without confirming it by a renewal of its own first — whether
// the hand-over reaches it by its own process's release reply or by the
// notice of another process's release. Its grant is timed from this
// process's last release of the key, not from its try, which would make a
// prompt grant look late (a round trip more on every hand-over of a
// burst).
func TestPromptHandOverNotConfirmed(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	const key = "prompt-hand-over"
	queue := "locktag:{" + key + "}:q"
	// Grants last 2s: a grant looks late after a third of it, which the
	// tries' 1s delay exceeds and a loaded machine's hand-over does not.
	window := locker.WithGrantWindow(2 * time.Second)
	d := &slowTriesDriver{Driver: redigo.New(srv.Pool(t))}
	lk := newLockerOn(t, d, window)
	other := newLocker(t, srv, window)
	first := mustObtain(t, lk, ctx, key, locker.Params{TTL: time.Minute})
	d.delay = time.Second
	ours, theirs := make(chan *locker.Lease, 3), make(chan *locker.Lease, 1)
	errs := make(chan error, 4)
	wait := func(l *locker.Locker, got chan<- *locker.Lease) {
		go func() {
			le, err := l.Obtain(ctx, key, locker.Params{TTL: time.Minute, Wait: time.Minute})
			if err != nil {
				errs <- err
				return
			}
			got <- le
		}()
	}
	queued := func(n int64) {
		t.Helper()
		eventually(t, promptly, "waiters queued", func() bool { return zcard(t, srv, queue) == n })
	}
	// The first waiter's channel is subscribed only after its try went
	// out, so it re-checks, which times it afresh; those after it join
	// that subscription and keep their try's timing.
	wait(lk, ours)
	queued(1)
	eventually(t, promptly, "the key's channel subscribed", func() bool { return numsub(t, srv, "locktag:{"+key+"}:c") == 1 })
	wait(lk, ours) // handed the lock by this process's release
	queued(2)
	wait(other, theirs) // another process's waiter
	queued(3)
	wait(lk, ours) // handed the lock by the other process's release
	queued(4)
	next := func(got <-chan *locker.Lease, what string) *locker.Lease {
		t.Helper()
		select {
		case le := <-got:
			return le
		case err := <-errs:
			t.Fatalf("%s: %v", what, err)
		case <-time.After(testwait.Timeout):
			t.Fatalf("timed out waiting for %s", what)
		}
		return nil
	}
	release := func(le *locker.Lease) {
		t.Helper()
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	release(first)
	release(next(ours, "the first waiter"))
	le := next(ours, "the hand-over by this process's release")
	if n := d.extends.Load(); n != 0 {
		t.Errorf("the waiter handed the lock by its own process's release confirmed it (%d renewals)", n)
	}
	release(le)
	release(next(theirs, "the other process's waiter"))
	le = next(ours, "the hand-over by the other process's release")
	if n := d.extends.Load(); n != 0 {
		t.Errorf("the waiter handed the lock by another process's release confirmed it (%d renewals in all)", n)
	}
	release(le)
}
