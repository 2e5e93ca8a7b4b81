package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// SetUser creates (or resets) the ACL user name with password and rules
// (ACL SETUSER name reset on >password rules...), failing the test on an
// error.
func (s *Server) SetUser(t testing.TB, name, password string, rules ...string) {
	t.Helper()
	args := []any{"SETUSER", name, "reset", "on", ">" + password}
	for _, r := range rules {
		args = append(args, r)
	}
	if _, err := s.Do("ACL", args...); err != nil {
		t.Fatalf("redistest: ACL SETUSER %s: %v", name, err)
	}
}

// UserPool is Pool for connections that log in as the ACL user name; it
// is closed when the test ends.
func (s *Server) UserPool(t testing.TB, name, password string) *redis.Pool {
	p := &redis.Pool{
		MaxIdle:     64,
		IdleTimeout: time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", s.Addr(),
				redis.DialConnectTimeout(time.Second),
				redis.DialReadTimeout(5*time.Second),
				redis.DialWriteTimeout(5*time.Second),
				redis.DialUsername(name), redis.DialPassword(password))
		},
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}
