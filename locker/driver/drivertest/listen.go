package drivertest

import (
	"strconv"
	"sync"
	"testing"

	"github.com/locktag/locktag/locker/driver"
)

// inbox records what a Listener delivers and whether it broke.
type inbox struct {
	mu     sync.Mutex
	msgs   []string // "channel payload"
	broken int
}

func (b *inbox) deliver(channel, payload string) {
	b.mu.Lock()
	b.msgs = append(b.msgs, channel+" "+payload)
	b.mu.Unlock()
}

func (b *inbox) broke(error) {
	b.mu.Lock()
	b.broken++
	b.mu.Unlock()
}

func (b *inbox) snapshot() (msgs []string, broken int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.msgs...), b.broken
}

func (b *inbox) has(msg string) bool {
	msgs, _ := b.snapshot()
	for _, m := range msgs {
		if m == msg {
			return true
		}
	}
	return false
}

// listen opens a Listener on a new driver, closed when t ends.
func (s *suite) listen(t *testing.T) (driver.Listener, *inbox) {
	t.Helper()
	d := s.driver(t, s.c.Addr)
	b := &inbox{}
	l, err := d.Listen(ctx(t), b.deliver, b.broke)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, b
}

// publish publishes and returns how many subscribers received it.
func (s *suite) publish(t *testing.T, channel, payload string) int64 {
	t.Helper()
	n, _ := s.admin(t, "PUBLISH", channel, payload).(int64)
	return n
}

// subscribeConfirmed: a message published right after Subscribe returns
// reaches the subscriber (the server counted it) and is delivered.
func (s *suite) subscribeConfirmed(t *testing.T) {
	l, b := s.listen(t)
	for i := range 20 {
		ch := unique("drivertest:sub:")
		if err := l.Subscribe(ctx(t), ch); err != nil {
			t.Fatal(err)
		}
		if n := s.publish(t, ch, "m"); n != 1 {
			t.Fatalf("subscription %d: PUBLISH right after Subscribe reached %d subscribers, want 1", i, n)
		}
		until(t, "delivery on "+ch, func() bool { return b.has(ch + " m") })
	}
}

// order: messages are delivered in the order they were published.
func (s *suite) order(t *testing.T) {
	l, b := s.listen(t)
	ch := unique("drivertest:order:")
	if err := l.Subscribe(ctx(t), ch); err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		s.publish(t, ch, strconv.Itoa(i))
	}
	until(t, "every message", func() bool { m, _ := b.snapshot(); return len(m) >= n })
	msgs, _ := b.snapshot()
	for i, m := range msgs {
		if m != ch+" "+strconv.Itoa(i) {
			t.Fatalf("message %d is %q: out of order", i, m)
		}
	}
}

// unsubscribe: after Unsubscribe the server stops counting the listener.
func (s *suite) unsubscribe(t *testing.T) {
	l, _ := s.listen(t)
	ch := unique("drivertest:unsub:")
	if err := l.Subscribe(ctx(t), ch); err != nil {
		t.Fatal(err)
	}
	if err := l.Unsubscribe(ch); err != nil {
		t.Fatal(err)
	}
	until(t, "the server to drop the subscription", func() bool {
		v, _ := s.admin(t, "PUBSUB", "NUMSUB", ch).([]any)
		return len(v) == 2 && v[1] == int64(0)
	})
}

// brokenOnce: a killed subscriber connection is reported exactly once.
func (s *suite) brokenOnce(t *testing.T) {
	_, b := s.listen(t)
	s.admin(t, "CLIENT", "KILL", "TYPE", "pubsub")
	until(t, "broken to be called", func() bool { _, n := b.snapshot(); return n > 0 })
	s.barrier(t)
	if _, n := b.snapshot(); n != 1 {
		t.Fatalf("broken called %d times, want once", n)
	}
}

// closeQuiet: Close does not call broken.
func (s *suite) closeQuiet(t *testing.T) {
	l, b := s.listen(t)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	s.barrier(t)
	if _, n := b.snapshot(); n != 0 {
		t.Fatalf("broken called %d times after Close, want 0", n)
	}
}

// barrier lets the driver's goroutines run: a fresh listener receives a
// message, so a report the driver was about to make has had its chance.
func (s *suite) barrier(t *testing.T) {
	t.Helper()
	l, b := s.listen(t)
	ch := unique("drivertest:barrier:")
	if err := l.Subscribe(ctx(t), ch); err != nil {
		t.Fatal(err)
	}
	s.publish(t, ch, "x")
	until(t, "the barrier message", func() bool { return b.has(ch + " x") })
}
