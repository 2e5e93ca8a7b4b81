package hub

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/redigo"
)

const sid = "sid-1" // the test hub's subscriber id

// newHub returns a hub on srv through the redigo driver, closed when the
// test ends.
func newHub(t *testing.T, srv *redistest.Server, linger time.Duration) *Hub {
	t.Helper()
	h := New(redigo.New(srv.Pool(t)), Config{Bounds: callctx.Bounds{Timeout: 2 * time.Second}, Linger: linger, SID: sid})
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// join registers a waiter for token and queues it on channel.
func join(t *testing.T, h *Hub, channel, token string) (*Waiter, Member) {
	t.Helper()
	w := h.Register(token)
	t.Cleanup(func() { h.Unregister(w) })
	m, _, err := h.Join(context.Background(), channel, time.Now(), w)
	if err != nil {
		t.Fatalf("Join %s: %v", channel, err)
	}
	return w, m
}

func publish(t *testing.T, srv *redistest.Server, channel, payload string) {
	t.Helper()
	if _, err := srv.Do("PUBLISH", channel, payload); err != nil {
		t.Fatal(err)
	}
}

// subscribers is the count of the server's subscribers to channel.
func subscribers(t *testing.T, srv *redistest.Server, channel string) int {
	t.Helper()
	v, err := redis.Values(srv.Do("PUBSUB", "NUMSUB", channel))
	if err != nil || len(v) != 2 {
		t.Fatalf("PUBSUB NUMSUB: %v %v", v, err)
	}
	n, _ := v[1].(int64)
	return int(n)
}

// empty fails the test if c holds anything.
func empty[T any](t *testing.T, c chan T, what string) {
	t.Helper()
	select {
	case v := <-c:
		t.Fatalf("%s: got %v, want nothing", what, v)
	default:
	}
}

// TestGrantReachesTheWaiterItNames: a grant notice "token fence server
// pttl" is delivered to the one local waiter it names, parsed; the other
// waiters of the key are not told, and a grant naming no local waiter
// reaches no one.
func TestGrantReachesTheWaiterItNames(t *testing.T) {
	srv := redistest.Start(t)
	h := newHub(t, srv, 0)
	a, _ := join(t, h, "t:{k}:c", "tok-a")
	b, _ := join(t, h, "t:{k}:c", "tok-b")

	// Leases of a minute: the key's safety re-check stays far off.
	publish(t, srv, "t:{k}:c", "tok-other 6 999 60000")
	publish(t, srv, "t:{k}:c", "tok-b 7 1000 60000")
	g := testwait.Recv(t, b.Grant, "b's grant")
	if g.Fence != 7 || g.Server != 1000 || g.PTTL != time.Minute {
		t.Fatalf("grant %+v, want fence 7, server 1000, pttl 1m", g)
	}
	// The notices are delivered in order on one connection: a grant to a
	// delivered after these two shows they were handled.
	publish(t, srv, "t:{k}:c", "tok-a 8 1001 60000")
	if g := testwait.Recv(t, a.Grant, "a's grant"); g.Fence != 8 {
		t.Fatalf("a's grant %+v, want fence 8", g)
	}
	empty(t, a.Grant, "a after its one grant")
	empty(t, b.Grant, "b after its one grant")
	empty(t, a.Check, "a's re-check")

	// A record's waiter is told "token 0 0".
	publish(t, srv, "t:{k}:c", "tok-a 0 0")
	if g := testwait.Recv(t, a.Grant, "a's record notice"); g != (Grant{}) {
		t.Fatalf("record notice %+v, want the zero grant", g)
	}
}

// TestFreeNoticeChecksTheFirstWaiter: a free notice "-" makes the first
// local waiter of the key re-check, and only it; a re-check it leaves
// without making passes to the next waiter.
func TestFreeNoticeChecksTheFirstWaiter(t *testing.T) {
	srv := redistest.Start(t)
	h := newHub(t, srv, 0)
	a, ma := join(t, h, "t:{k}:c", "tok-a")
	b, _ := join(t, h, "t:{k}:c", "tok-b")

	publish(t, srv, "t:{k}:c", "-")
	publish(t, srv, "t:{k}:c", "tok-a 1 1") // handled after the free notice (no lease: no safety timer)
	testwait.Recv(t, a.Grant, "a's grant after the free notice")
	if len(a.Check) != 1 {
		t.Fatal("the first waiter was not told to re-check")
	}
	empty(t, b.Check, "the second waiter")

	h.Leave(ma) // a leaves without re-checking
	testwait.Recv(t, b.Check, "the re-check passed on to b")
}

// TestCutOffNoticeChecksThisHubsWaiters: "!sid" with this hub's
// subscriber id makes every local waiter of the key re-check; another
// subscriber's id, none.
func TestCutOffNoticeChecksThisHubsWaiters(t *testing.T) {
	srv := redistest.Start(t)
	h := newHub(t, srv, 0)
	a, _ := join(t, h, "t:{k}:c", "tok-a")
	b, _ := join(t, h, "t:{k}:c", "tok-b")

	publish(t, srv, "t:{k}:c", "!sid-2")
	publish(t, srv, "t:{k}:c", "tok-a 1 1")
	testwait.Recv(t, a.Grant, "a's grant after another hub's cut-off")
	empty(t, a.Check, "a after another hub's cut-off")
	empty(t, b.Check, "b after another hub's cut-off")

	publish(t, srv, "t:{k}:c", "!"+sid)
	testwait.Recv(t, a.Check, "a's re-check")
	testwait.Recv(t, b.Check, "b's re-check")
}

// TestSafetyTimerAtLeaseEnd: a grant notice tells every local waiter of
// the key when the new lease ends: the first re-checks then, not before.
func TestSafetyTimerAtLeaseEnd(t *testing.T) {
	srv := redistest.Start(t)
	h := newHub(t, srv, 0)
	a, _ := join(t, h, "t:{k}:c", "tok-a")
	const pttl = 80 * time.Millisecond
	start := time.Now()
	publish(t, srv, "t:{k}:c", "tok-other 1 1000 80")
	testwait.Recv(t, a.Check, "the safety re-check")
	if d := time.Since(start); d < pttl {
		t.Fatalf("re-check %v after the grant, before its lease of %v ended", d, pttl)
	}
	// An older report (by server time) does not move the timer.
	h.mu.Lock()
	s := h.chans["t:{k}:c"]
	h.observeLocked(s, time.Hour, 999, false)
	seen := s.seen
	h.mu.Unlock()
	if seen != 1000 {
		t.Fatalf("an older report moved the timer (seen %d)", seen)
	}
}

// TestSubscriptionLifecycle: Join subscribes the channel on the server
// before it returns and reports whether a notice may have been missed;
// the last Leave unsubscribes after the linger, and a Join within the
// linger keeps the subscription.
func TestSubscriptionLifecycle(t *testing.T) {
	srv := redistest.Start(t)
	const linger = 300 * time.Millisecond
	h := newHub(t, srv, linger)
	ctx := context.Background()
	before := time.Now()
	m, missed, err := h.Join(ctx, "t:{k}:c", before, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !missed {
		t.Error("a subscription confirmed after since: missed is false")
	}
	if n := subscribers(t, srv, "t:{k}:c"); n != 1 {
		t.Fatalf("%d subscribers after Join, want 1", n)
	}
	m2, missed, err := h.Join(ctx, "t:{k}:c", time.Now(), nil)
	if err != nil || missed {
		t.Fatalf("second Join on a live subscription: missed %v, err %v; want neither", missed, err)
	}
	h.Leave(m)
	h.Leave(m2)
	left := time.Now()
	if n := subscribers(t, srv, "t:{k}:c"); n != 1 && time.Since(left) < linger {
		t.Fatal("unsubscribed within the linger")
	}
	// Back within the linger: the same subscription, its timer stopped.
	m3, _, err := h.Join(ctx, "t:{k}:c", time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	lingering := h.chans["t:{k}:c"].linger != nil
	h.mu.Unlock()
	if lingering {
		t.Fatal("a Join within the linger left its timer running")
	}
	h.Leave(m3)
	left = time.Now()
	testwait.Eventually(t, "unsubscribed after the linger", func() bool { return subscribers(t, srv, "t:{k}:c") == 0 })
	if d := time.Since(left); d < linger {
		t.Fatalf("unsubscribed %v after the last Leave, before the linger %v", d, linger)
	}
	h.mu.Lock()
	n := len(h.chans)
	h.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d subscriptions kept after the linger", n)
	}
}

// TestBurstSubscribesEarly: a second call registered at a channel
// subscribes it at once (a burst), before any of them waits; the last
// Unregister drops the subscription.
func TestBurstSubscribesEarly(t *testing.T) {
	srv := redistest.Start(t)
	h := newHub(t, srv, 0)
	a := h.RegisterAt("tok-a", "t:{k}:c")
	h.mu.Lock()
	lone := len(h.chans)
	h.mu.Unlock()
	if lone != 0 {
		t.Fatal("a lone call subscribed before it waits")
	}
	b := h.RegisterAt("tok-b", "t:{k}:c")
	testwait.Eventually(t, "the burst's channel subscribed", func() bool { return subscribers(t, srv, "t:{k}:c") == 1 })
	h.Unregister(a)
	h.Unregister(b)
	testwait.Eventually(t, "the channel unsubscribed", func() bool { return subscribers(t, srv, "t:{k}:c") == 0 })
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.arrivals) != 0 || len(h.waiters) != 0 {
		t.Fatalf("arrivals %v, waiters %d left after Unregister", h.arrivals, len(h.waiters))
	}
}

// TestDroppedBeforeSubscribed: a subscription whose last user left
// while its SUBSCRIBE was still on its way is unsubscribed once the
// SUBSCRIBE completes, so the channel does not stay subscribed on the
// connection with no one to drop it.
func TestDroppedBeforeSubscribed(t *testing.T) {
	srv := redistest.Start(t)
	gate := make(chan struct{})
	d := gated{Driver: redigo.New(srv.Pool(t)), gate: gate, held: new(atomic.Int32), subscribed: new(atomic.Bool)}
	h := New(d, Config{Bounds: callctx.Bounds{Timeout: 5 * time.Second}, SID: sid})
	t.Cleanup(func() { _ = h.Close() })

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, err := h.Join(ctx, "t:{k}:c", time.Now(), nil)
		errc <- err
	}()
	testwait.Eventually(t, "the SUBSCRIBE held at the gate", d.waiting)
	cancel() // the one user leaves before the SUBSCRIBE was sent
	if err := testwait.Recv(t, errc, "the cancelled Join"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Join: %v, want context.Canceled", err)
	}
	close(gate)
	testwait.Eventually(t, "the channel subscribed and then dropped", func() bool {
		return d.subscribed.Load() && subscribers(t, srv, "t:{k}:c") == 0
	})
}

// gated is a driver whose listeners hold every SUBSCRIBE until gate is
// closed.
type gated struct {
	driver.Driver
	gate       chan struct{}
	held       *atomic.Int32 // SUBSCRIBEs waiting at the gate
	subscribed *atomic.Bool  // a SUBSCRIBE went through
}

func (g gated) Listen(ctx context.Context, deliver func(channel, payload string), broken func(error)) (driver.Listener, error) {
	lis, err := g.Driver.Listen(ctx, deliver, broken)
	if err != nil {
		return nil, err
	}
	return gatedListener{lis, g}, nil
}

func (g gated) waiting() bool { return g.held.Load() > 0 }

type gatedListener struct {
	driver.Listener
	g gated
}

func (l gatedListener) Subscribe(ctx context.Context, channel string) error {
	l.g.held.Add(1)
	<-l.g.gate
	l.g.held.Add(-1)
	err := l.Listener.Subscribe(ctx, channel)
	if err == nil {
		l.g.subscribed.Store(true)
	}
	return err
}

// TestUnregisteredWaiterGetsNothing: an unregistered token is gone from
// the hub, and a grant to it reaches no waiter (one recycled since among
// them).
func TestUnregisteredWaiterGetsNothing(t *testing.T) {
	srv := redistest.Start(t)
	h := newHub(t, srv, 0)
	_, _ = join(t, h, "t:{k}:c", "keep-open") // keeps the channel subscribed
	w := h.Register("tok-gone")
	h.Unregister(w)
	h.mu.Lock()
	kept := h.waiters["tok-gone"] != nil
	h.mu.Unlock()
	if kept {
		t.Fatal("an unregistered token is still registered")
	}
	next := h.Register("tok-next") // may be the recycled waiter
	t.Cleanup(func() { h.Unregister(next) })
	h.HandOver("t:{k}:c", "tok-gone", Grant{Fence: 1})
	empty(t, next.Grant, "a waiter registered after the grant's token left")
}

// TestBrokenListenerKicksWaiters: when the subscriber connection breaks,
// every registered waiter is kicked (re-subscribe, re-check) and the
// subscriptions are forgotten; the next Join subscribes on a new
// connection.
func TestBrokenListenerKicksWaiters(t *testing.T) {
	srv := redistest.Start(t)
	h := newHub(t, srv, 0)
	a, _ := join(t, h, "t:{k}:c", "tok-a")
	b := h.Register("tok-b") // registered, not queued
	t.Cleanup(func() { h.Unregister(b) })
	if _, err := srv.Do("CLIENT", "KILL", "TYPE", "pubsub"); err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, a.Kick, "a's kick")
	testwait.Recv(t, b.Kick, "b's kick")
	h.mu.Lock()
	n := len(h.chans)
	h.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d subscriptions kept on a broken connection", n)
	}
	if _, _, err := h.Join(context.Background(), "t:{k}:c", time.Now(), a); err != nil {
		t.Fatalf("Join after the break: %v", err)
	}
	if n := subscribers(t, srv, "t:{k}:c"); n != 1 {
		t.Fatalf("%d subscribers after the Join on a new connection, want 1", n)
	}
}

// TestControlChannel: WatchControl subscribes the control channel in
// the background, and its messages go to the control function, not to
// waiters.
func TestControlChannel(t *testing.T) {
	srv := redistest.Start(t)
	h := newHub(t, srv, 0)
	got := make(chan string, 4)
	h.SetControl("t:control", func(p string) { got <- p })
	h.WatchControl()
	testwait.Eventually(t, "the control channel subscribed", h.ControlReady)
	publish(t, srv, "t:control", "tok-a,tok-b reason")
	if p := testwait.Recv(t, got, "the control message"); p != "tok-a,tok-b reason" {
		t.Fatalf("control message %q", p)
	}
}

// TestClosedHub: after Close, Join fails with the listener's closed
// error, and a Watch falls back to polling at the lease's end.
func TestClosedHub(t *testing.T) {
	srv := redistest.Start(t)
	h := newHub(t, srv, 0)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Join(context.Background(), "t:{k}:c", time.Now(), nil); !errors.Is(err, driver.ErrListenerClosed) {
		t.Fatalf("Join on a closed hub: %v, want ErrListenerClosed", err)
	}
	w := NewWaiter("tok-a")
	wt := h.Watch("t:{k}:c", w)
	defer wt.Close()
	missed, err := wt.Ensure(context.Background(), time.Now())
	if missed || err != nil {
		t.Fatalf("Ensure on a closed hub: missed %v, err %v; want neither (polling)", missed, err)
	}
	start := time.Now()
	wt.Observe(30*time.Millisecond, 0)
	testwait.Recv(t, wt.Polled(), "the poll at the lease's end")
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("polled after %v, before the lease's end", d)
	}
}
