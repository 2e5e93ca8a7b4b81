package keeper

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker/driver"
)

// owner is an Owner whose renewals the test answers one by one: each
// ExtendLease call waits on calls for the test's reply. Its Lose stops
// the keeper, as a lease and a claim do, unless keep is set.
type owner struct {
	k     *Keeper
	ttl   time.Duration // RenewTTL
	keep  bool          // Lose leaves the keeper running
	calls chan call
	lost  chan loss
	done  chan struct{} // closed when the test ends: calls no one answers return
}

type call struct {
	ttl      time.Duration
	at       time.Time // when ExtendLease was called
	priority bool      // the context carried driver.WithPriority
	reply    chan answer
}

type answer struct {
	ok  bool
	err error
}

type loss struct {
	why Loss
	err error
	at  time.Time
}

// newOwner returns an owner asking for renewals of ttl, with a Keeper
// that is stopped when the test ends.
func newOwner(t *testing.T, ttl time.Duration) *owner {
	o := &owner{k: new(Keeper), ttl: ttl, calls: make(chan call), lost: make(chan loss, 8), done: make(chan struct{})}
	t.Cleanup(func() {
		o.k.Mu.Lock()
		o.k.StopLocked()
		o.k.Mu.Unlock()
		close(o.done)
	})
	return o
}

var errTestOver = errors.New("the test is over")

func (o *owner) RenewTTL() time.Duration { return o.ttl }

func (o *owner) ExtendLease(ctx context.Context, ttl time.Duration) (bool, error) {
	c := call{ttl: ttl, at: time.Now(), priority: driver.IsPriority(ctx), reply: make(chan answer)}
	select {
	case o.calls <- c:
	case <-o.done:
		return false, errTestOver
	}
	select {
	case a := <-c.reply:
		return a.ok, a.err
	case <-o.done:
		return false, errTestOver
	}
}

// ValidUntil: no drift allowance.
func (o *owner) ValidUntil(sent time.Time, ttl time.Duration) time.Time { return sent.Add(ttl) }

func (o *owner) Renewed(bool, error) {}

func (o *owner) Lose(why Loss, lastErr error) {
	at := time.Now()
	if !o.keep {
		o.k.Mu.Lock()
		o.k.StopLocked()
		o.k.Mu.Unlock()
	}
	o.lost <- loss{why, lastErr, at}
}

// next receives the next renewal call.
func (o *owner) next(t *testing.T, what string) call {
	t.Helper()
	return testwait.Recv(t, o.calls, what)
}

// answer replies to c and returns when the keeper has it.
func (c call) answer(ok bool, err error) { c.reply <- answer{ok, err} }

// TestRenewalSchedule: the first renewal comes after first, asks for the
// owner's lease and runs with priority; a confirmed renewal moves the
// deadline to ValidUntil of its call and schedules the next one every
// later (not retry).
func TestRenewalSchedule(t *testing.T) {
	const first, every, retry = 30 * time.Millisecond, 150 * time.Millisecond, 5 * time.Millisecond
	o := newOwner(t, 10*time.Second)
	start := time.Now()
	o.k.Start(o, start.Add(5*time.Second), first, every, retry, false)

	c := o.next(t, "the first renewal")
	if d := c.at.Sub(start); d < first {
		t.Fatalf("first renewal after %v, want not before %v", d, first)
	}
	if c.ttl != 10*time.Second || !c.priority {
		t.Fatalf("renewal asked for %v (priority %v), want the owner's 10s with priority", c.ttl, c.priority)
	}
	c.answer(true, nil)
	c2 := o.next(t, "the second renewal")
	if d := c2.at.Sub(c.at); d < every {
		t.Fatalf("second renewal %v after the first, want every %v", d, every)
	}
	o.k.Mu.Lock()
	deadline := o.k.deadline
	o.k.Mu.Unlock()
	// ValidUntil(sent, ttl): sent is taken just before the first call.
	if lo, hi := start.Add(first+10*time.Second), c.at.Add(10*time.Second); deadline.Before(lo) || deadline.After(hi) {
		t.Fatalf("deadline after a renewal is %v from start, want in [%v, %v]", deadline.Sub(start), lo.Sub(start), hi.Sub(start))
	}
	c2.answer(true, nil)
	select {
	case l := <-o.lost:
		t.Fatalf("lost (%v) with every renewal confirmed", l.why)
	default:
	}
}

// TestRefusedRenewalLoses: a renewal Redis refuses loses the lease at
// once, as Refused, long before its deadline.
func TestRefusedRenewalLoses(t *testing.T) {
	o := newOwner(t, time.Second)
	o.k.Start(o, time.Now().Add(time.Minute), time.Millisecond, 10*time.Millisecond, 10*time.Millisecond, false)
	o.next(t, "the renewal").answer(false, nil)
	l := testwait.Recv(t, o.lost, "the loss")
	if l.why != Refused || l.err != nil {
		t.Fatalf("lost as %v (%v), want Refused with no error", l.why, l.err)
	}
}

// TestFailedRenewalsRetryThenExpire: a renewal whose call fails is
// retried after retry, not at the renewal's own pace; the lease is lost
// when its deadline passes, not before, as Expired with the last call's
// error.
func TestFailedRenewalsRetryThenExpire(t *testing.T) {
	const first, every, retry, life = 10 * time.Millisecond, time.Hour, 50 * time.Millisecond, time.Second
	o := newOwner(t, time.Second)
	start := time.Now()
	o.k.Start(o, start.Add(life), first, every, retry, false)
	down := errors.New("down")
	c := o.next(t, "the first renewal")
	c.answer(false, down)
	answered := time.Now()
	c2 := o.next(t, "the retry")
	if d := c2.at.Sub(answered); d < retry {
		t.Fatalf("retried %v after the failure, want not before %v", d, retry)
	}
	c2.answer(false, down)
	// Later retries go unanswered until the test ends: the deadline ends
	// the lease meanwhile.
	l := testwait.Recv(t, o.lost, "the loss")
	if l.why != Expired || !errors.Is(l.err, down) {
		t.Fatalf("lost as %v (%v), want Expired with the last error", l.why, l.err)
	}
	if d := l.at.Sub(start); d < life {
		t.Fatalf("lost %v after the start, before the deadline %v", d, life)
	}
}

// TestStepErrorLosesAtOnce: a renewal that found the server's clock
// stepped (*StepError) loses the lease at once, as Stepped, with the
// step's own error, instead of retrying until the deadline.
func TestStepErrorLosesAtOnce(t *testing.T) {
	o := newOwner(t, time.Second)
	o.k.Start(o, time.Now().Add(time.Minute), time.Millisecond, time.Second, time.Millisecond, false)
	stepped := errors.New("stepped back")
	o.next(t, "the renewal").answer(false, &StepError{Err: stepped})
	l := testwait.Recv(t, o.lost, "the loss")
	if l.why != Stepped || l.err != stepped {
		t.Fatalf("lost as %v (%v), want Stepped with the step's error", l.why, l.err)
	}
}

// TestLateConfirmationDoesNotRevive: a renewal confirmed after the
// deadline passed loses the lease (Expired) and leaves the deadline
// where it was: it does not bring the lease back.
func TestLateConfirmationDoesNotRevive(t *testing.T) {
	const life = 60 * time.Millisecond
	// A lease of a minute: a deadline moved by the late confirmation
	// would put the next loss a minute away.
	o := newOwner(t, time.Minute)
	o.keep = true // the expiry timer's loss leaves the renewal to finish
	start := time.Now()
	o.k.Start(o, start.Add(life), time.Millisecond, 10*time.Millisecond, 10*time.Millisecond, false)
	c := o.next(t, "the renewal")
	if l := testwait.Recv(t, o.lost, "the expiry timer's loss"); l.why != Expired {
		t.Fatalf("expiry timer: lost as %v, want Expired", l.why)
	}
	c.answer(true, nil) // confirmed, but too late
	if l := testwait.Recv(t, o.lost, "the late renewal's loss"); l.why != Expired || l.err != nil {
		t.Fatalf("late renewal: lost as %v (%v), want Expired", l.why, l.err)
	}
	o.k.Mu.Lock()
	overdue, _ := o.k.OverdueLocked()
	o.k.Mu.Unlock()
	if !overdue {
		t.Fatal("a late confirmation moved the deadline")
	}
}

// TestLazyExpiry: a lease never renewed, started lazy, arms no expiry
// timer: it reports the passed deadline through OverdueLocked, with no
// loss, until ArmExpiryLocked arms the timer, which then loses it. A
// stopped keeper arms nothing.
func TestLazyExpiry(t *testing.T) {
	o := newOwner(t, 0)
	o.k.Start(o, time.Now().Add(20*time.Millisecond), 0, 0, time.Millisecond, true)
	o.k.Mu.Lock()
	armed := o.k.expiry != nil
	o.k.Mu.Unlock()
	if armed {
		t.Fatal("a lazy lease armed its expiry timer")
	}
	testwait.Eventually(t, "the deadline reported overdue", func() bool {
		o.k.Mu.Lock()
		defer o.k.Mu.Unlock()
		overdue, _ := o.k.OverdueLocked()
		return overdue
	})
	select {
	case l := <-o.lost:
		t.Fatalf("a lazy lease was lost (%v) with no timer armed", l.why)
	default:
	}
	o.k.Mu.Lock()
	o.k.ArmExpiryLocked()
	o.k.Mu.Unlock()
	if l := testwait.Recv(t, o.lost, "the loss once armed"); l.why != Expired {
		t.Fatalf("lost as %v, want Expired", l.why)
	}

	// Stopped: nothing armed, nothing overdue.
	s := newOwner(t, 0)
	s.k.Start(s, time.Now().Add(-time.Second), 0, 0, time.Millisecond, true)
	s.k.Mu.Lock()
	if !s.k.StopLocked() || s.k.StopLocked() {
		t.Error("StopLocked reported running twice, or never")
	}
	s.k.ArmExpiryLocked()
	overdue, _ := s.k.OverdueLocked()
	armed = s.k.expiry != nil
	s.k.Mu.Unlock()
	if armed || overdue {
		t.Fatalf("a stopped keeper: armed %v, overdue %v; want neither", armed, overdue)
	}
}

// TestRenewTTLNoneLeavesExpiry: an owner that asks for no renewal
// (RenewTTL <= 0) makes no call; the expiry timer ends the lease.
func TestRenewTTLNoneLeavesExpiry(t *testing.T) {
	o := newOwner(t, 0)
	start := time.Now()
	o.k.Start(o, start.Add(50*time.Millisecond), time.Millisecond, time.Millisecond, time.Millisecond, false)
	select {
	case c := <-o.calls:
		c.answer(true, nil)
		t.Fatal("a renewal with no TTL to ask for was sent")
	case l := <-o.lost:
		if l.why != Expired || l.at.Sub(start) < 50*time.Millisecond {
			t.Fatalf("lost as %v after %v, want Expired after 50ms", l.why, l.at.Sub(start))
		}
	case <-time.After(testwait.Timeout):
		t.Fatal("no loss")
	}
}

// TestSetDeadlineMovesExpiry: SetDeadlineLocked moves an armed expiry
// timer with the deadline (Lease.Extend).
func TestSetDeadlineMovesExpiry(t *testing.T) {
	o := newOwner(t, 0)
	start := time.Now()
	o.k.Start(o, start.Add(time.Hour), 0, 0, time.Millisecond, false)
	o.k.Mu.Lock()
	o.k.SetDeadlineLocked(start.Add(30 * time.Millisecond))
	o.k.Mu.Unlock()
	if l := testwait.Recv(t, o.lost, "the loss at the moved deadline"); l.why != Expired || l.at.Sub(start) < 30*time.Millisecond {
		t.Fatalf("lost as %v after %v, want Expired after 30ms", l.why, l.at.Sub(start))
	}
}

func TestRetryAfter(t *testing.T) {
	for _, c := range []struct{ every, want time.Duration }{
		{20 * time.Millisecond, 10 * time.Millisecond}, // floor
		{400 * time.Millisecond, 100 * time.Millisecond},
		{4 * time.Second, time.Second},
		{time.Minute, time.Second}, // cap
	} {
		if got := RetryAfter(c.every); got != c.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", c.every, got, c.want)
		}
	}
}

// TestSchedule: a watchdog lease is renewed every renewEvery; a fixed
// one only to confirm a short grant (a hand-over's window), a third of
// the way into it counted from the grant, at least 1ms from now.
func TestSchedule(t *testing.T) {
	const ttl, every = 30 * time.Second, 10 * time.Second
	for _, c := range []struct {
		name      string
		ago       time.Duration // the grant was this long before now
		granted   time.Duration
		watchdog  bool
		first     [2]time.Duration // its range
		wantEvery time.Duration
	}{
		{"watchdog", 0, ttl, true, [2]time.Duration{every, every}, every},
		{"fixed", 0, ttl, false, [2]time.Duration{0, 0}, 0},
		{"fixed, grant window", 0, 300 * time.Millisecond, false, [2]time.Duration{time.Millisecond, 100 * time.Millisecond}, 0},
		{"watchdog, grant window", 0, 300 * time.Millisecond, true, [2]time.Duration{time.Millisecond, 100 * time.Millisecond}, every},
		{"grant window heard late", time.Second, 300 * time.Millisecond, false, [2]time.Duration{time.Millisecond, time.Millisecond}, 0},
	} {
		first, ev := Schedule(time.Now().Add(-c.ago), c.granted, ttl, c.watchdog, every)
		if first < c.first[0] || first > c.first[1] || ev != c.wantEvery {
			t.Errorf("%s: first %v every %v, want first in [%v, %v] every %v", c.name, first, ev, c.first[0], c.first[1], c.wantEvery)
		}
	}
}
