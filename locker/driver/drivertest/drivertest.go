package drivertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/locker/driver"
)

// Config describes the driver under test.
type Config struct {
	// Addr is the host:port of a running redis-server without a password.
	// The suite flushes its script cache and kills its pub/sub clients.
	Addr string
	// New returns a driver connected to the Redis server at addr. The
	// suite closes it (if it implements io.Closer) when the test ends.
	New func(t testing.TB, addr string) driver.Driver
}

// wait bounds every wait of the suite: long enough for a loaded machine,
// short enough to fail a hung driver.
const wait = 10 * time.Second

// Run runs the contract as subtests of t.
func Run(t *testing.T, c Config) {
	t.Helper()
	if c.Addr == "" || c.New == nil {
		t.Fatal("drivertest: Config needs Addr and New")
	}
	s := &suite{c: c}
	t.Run("Replies", s.replies)
	t.Run("KeysAndArgs", s.keysAndArgs)
	t.Run("ErrorReply", s.errorReply)
	t.Run("NoScriptFallback", s.noScript)
	t.Run("Deadline", s.deadline)
	t.Run("CancelledBeforeSend", s.cancelled)
	t.Run("Unreachable", s.unreachable)
	t.Run("Concurrent", s.concurrent)
	t.Run("SubscribeConfirmed", s.subscribeConfirmed)
	t.Run("DeliveryOrder", s.order)
	t.Run("Unsubscribe", s.unsubscribe)
	t.Run("BrokenOnce", s.brokenOnce)
	t.Run("CloseIsQuiet", s.closeQuiet)
}

type suite struct{ c Config }

// driver returns a new driver under test, closed when t ends.
func (s *suite) driver(t *testing.T, addr string) driver.Driver {
	t.Helper()
	d := s.c.New(t, addr)
	if cl, ok := d.(interface{ Close() error }); ok {
		t.Cleanup(func() { _ = cl.Close() })
	}
	return d
}

// admin runs one command on the server over a connection of the suite's own.
func (s *suite) admin(t *testing.T, cmd string, args ...any) any {
	t.Helper()
	conn, err := redis.Dial("tcp", s.c.Addr, redis.DialConnectTimeout(wait), redis.DialReadTimeout(wait))
	if err != nil {
		t.Fatalf("drivertest: admin connection: %v", err)
	}
	defer conn.Close()
	v, err := conn.Do(cmd, args...)
	if err != nil {
		t.Fatalf("drivertest: %s: %v", cmd, err)
	}
	return v
}

// unique returns a fresh name, so runs against one server never meet.
func unique(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return c
}

// until polls cond until it holds or the suite's bound passes.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("drivertest: timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond) // polling a condition, not synchronising
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func isNotSent(err error) bool { return errors.Is(err, driver.ErrNotSent) }
