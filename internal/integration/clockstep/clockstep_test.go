// Package clockstep_test steps the Redis server's clock under a Locker:
// the check (locker.WithClockStepTolerance) must refuse a token lower than
// one handed out before, and end a lease whose renewal meets the step; the
// control, with the check off, hands the lower token out. The server is
// miniredis, whose clock a test can set (a redis-server's TIME follows the
// machine's clock, which a test may not step).
package clockstep_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// server is a miniredis whose clock runs offset from the machine's,
// kept up to date every millisecond.
type server struct {
	m      *miniredis.Miniredis
	offset atomic.Int64 // nanoseconds
	pool   *redis.Pool
}

func start(t *testing.T) *server {
	t.Helper()
	s := &server{m: miniredis.RunT(t)}
	s.m.SetTime(time.Now())
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				s.m.SetTime(time.Now().Add(time.Duration(s.offset.Load())))
			}
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
	s.pool = &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", s.m.Addr()) }}
	t.Cleanup(func() { s.pool.Close() })
	return s
}

// step moves the server's clock by d and waits until its TIME shows it.
func (s *server) step(t *testing.T, d time.Duration) {
	t.Helper()
	s.offset.Add(int64(d))
	want := time.Now().Add(time.Duration(s.offset.Load()))
	testwait.Within(t, 5*time.Second, "the server's clock stepped", func() bool {
		c := s.pool.Get()
		defer c.Close()
		v, err := redis.Int64s(c.Do("TIME"))
		if err != nil || len(v) != 2 {
			return false
		}
		got := time.Unix(v[0], v[1]*1000)
		return got.Sub(want).Abs() < 100*time.Millisecond
	})
}

func (s *server) locker(t *testing.T, opts ...locker.Option) *locker.Locker {
	t.Helper()
	lk, err := locker.New(redigo.New(s.pool), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

// token takes and releases key once and returns its fencing token.
func token(ctx context.Context, lk *locker.Locker, key string) (int64, error) {
	le, err := lk.Obtain(ctx, key, locker.Params{})
	if err != nil {
		return 0, err
	}
	defer le.Release(ctx)
	return le.Token(), nil
}

// TestStepBackAtObtain: after the server's clock steps back, the next
// free lock's token would be lower than one handed out before; with the
// check Obtain refuses it (ErrClockStep, ErrUnavailable) and leaves the
// lock free, until the server's clock has caught up, and then hands out a
// higher token. The control, without the check, hands the lower one out.
func TestStepBackAtObtain(t *testing.T) {
	ctx := context.Background()
	for _, check := range []bool{true, false} {
		name := map[bool]string{true: "check", false: "control"}[check]
		t.Run(name, func(t *testing.T) {
			s := start(t)
			tolerance := 200 * time.Millisecond
			if !check {
				tolerance = 0
			}
			lk := s.locker(t, locker.WithClockStepTolerance(tolerance))
			before, err := token(ctx, lk, "k")
			if err != nil {
				t.Fatal(err)
			}
			s.step(t, -2*time.Second)
			after, err := token(ctx, lk, "k")
			if !check {
				if err != nil || after >= before {
					t.Fatalf("control: token %d after %d (%v); want a lower token: the step must show without the check", after, before, err)
				}
				return
			}
			if !errors.Is(err, locker.ErrClockStep) || !errors.Is(err, locker.ErrUnavailable) {
				t.Fatalf("after the step: token %d, %v; want ErrClockStep and ErrUnavailable", after, err)
			}
			if _, err := lk.Inspect(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			if v, err := lk.Inspect(ctx, "k"); err != nil || len(v.Holders) != 0 {
				t.Fatalf("the refused lock is still held: %+v %v", v, err)
			}
			// Refused until the server's clock is back where it was; then
			// a token above every earlier one.
			var got int64
			testwait.Within(t, 10*time.Second, "Obtain after the server's clock caught up", func() bool {
				got, err = token(ctx, lk, "k")
				return err == nil
			})
			if got <= before {
				t.Fatalf("token %d after catching up, want above %d", got, before)
			}
		})
	}
}

// TestStepBackAtRenewal: a watchdog lease whose renewal meets a step back
// ends as lost with a cause matching ErrClockStep and ErrLockLost; the
// control keeps it.
func TestStepBackAtRenewal(t *testing.T) {
	ctx := context.Background()
	for _, check := range []bool{true, false} {
		name := map[bool]string{true: "check", false: "control"}[check]
		t.Run(name, func(t *testing.T) {
			s := start(t)
			tolerance := 200 * time.Millisecond
			if !check {
				tolerance = 0
			}
			lk := s.locker(t, locker.WithClockStepTolerance(tolerance), locker.WithWatchdog(900*time.Millisecond, 50*time.Millisecond))
			le, err := lk.Obtain(ctx, "held", locker.Params{})
			if err != nil {
				t.Fatal(err)
			}
			defer le.Release(ctx)
			s.step(t, -2*time.Second)
			if check {
				testwait.Recv(t, le.Context().Done(), "the lease's end at its renewal")
				if cause := context.Cause(le.Context()); !errors.Is(cause, locker.ErrClockStep) || !errors.Is(cause, locker.ErrLockLost) {
					t.Fatalf("cause %v, want ErrClockStep and ErrLockLost", cause)
				}
				return
			}
			// The control: renewals go on (the value's lease end moves)
			// and the lease stays held.
			read := func() string { v, _ := s.m.Get("locktag:{held}"); return v }
			seen := read()
			for range 3 {
				testwait.Within(t, 5*time.Second, "a renewal", func() bool { v := read(); return v != seen && v != "" })
				seen = read()
			}
			if err := le.Context().Err(); err != nil {
				t.Fatalf("control: the lease ended: %v", context.Cause(le.Context()))
			}
		})
	}
}
