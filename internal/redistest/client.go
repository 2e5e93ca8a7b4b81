package redistest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Clients of a running server: pools, a subscriber, one-off commands.

// NewPool returns a new redigo pool to this server with short timeouts,
// outside a test (for examples); the caller closes it.
func (s *Server) NewPool() *redis.Pool {
	return &redis.Pool{
		MaxIdle:     64,
		IdleTimeout: time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", s.Addr(),
				redis.DialConnectTimeout(time.Second),
				redis.DialReadTimeout(5*time.Second),
				redis.DialWriteTimeout(5*time.Second), s.dialAuth())
		},
	}
}

// Pool returns a new redigo pool to this server with short timeouts; it is
// closed when the test ends. Each call returns a separate pool, so tests can
// simulate separate processes.
func (s *Server) Pool(t testing.TB) *redis.Pool {
	p := s.NewPool()
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// Messages subscribes to channel on a connection of its own and returns a
// function that lists the payloads published on it so far, in order. The
// subscription is confirmed before Messages returns and ends with the test.
func (s *Server) Messages(t testing.TB, channel string) func() []string {
	t.Helper()
	c, err := redis.Dial("tcp", s.Addr(), redis.DialConnectTimeout(time.Second), s.dialAuth())
	if err != nil {
		t.Fatal(err)
	}
	psc := redis.PubSubConn{Conn: c}
	if err := psc.Subscribe(channel); err != nil {
		t.Fatal(err)
	}
	if _, ok := psc.Receive().(redis.Subscription); !ok {
		t.Fatalf("redistest: SUBSCRIBE %s not confirmed", channel)
	}
	var mu sync.Mutex
	var msgs []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			switch m := psc.Receive().(type) {
			case redis.Message:
				mu.Lock()
				msgs = append(msgs, string(m.Data))
				mu.Unlock()
			case error:
				return
			}
		}
	}()
	t.Cleanup(func() { _ = c.Close(); <-done })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), msgs...)
	}
}

// Do runs one command on a fresh connection (for test setup and inspection).
func (s *Server) Do(cmd string, args ...any) (any, error) {
	c, err := redis.Dial("tcp", s.Addr(), redis.DialConnectTimeout(time.Second),
		redis.DialReadTimeout(5*time.Second), s.dialAuth())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Do(cmd, args...)
}
