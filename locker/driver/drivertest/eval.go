package drivertest

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locktag/locktag/locker/driver"
)

// replies: integers as int64, bulk and status strings as string, arrays as
// []any (nested), nil and false as nil.
func (s *suite) replies(t *testing.T) {
	d := s.driver(t, s.c.Addr)
	for _, tc := range []struct {
		src  string
		want any
	}{
		{"return 42", int64(42)},
		{"return -7", int64(-7)},
		{"return 'text'", "text"},
		{"return redis.status_reply('OK')", "OK"},
		{"return nil", nil},
		{"return false", nil},
		{"return {1, 'two', {3, 'four'}}", []any{int64(1), "two", []any{int64(3), "four"}}},
		{"return {}", []any{}},
	} {
		got, err := d.Eval(ctx(t), driver.NewScript(tc.src), driver.Keys{})
		if err != nil {
			t.Errorf("%s: %v", tc.src, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %#v, want %#v", tc.src, got, tc.want)
		}
	}
}

// keysAndArgs: keys arrive as KEYS, arguments as ARGV in decimal text.
func (s *suite) keysAndArgs(t *testing.T) {
	d := s.driver(t, s.c.Addr)
	sc := driver.NewScript("return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], #KEYS, #ARGV}")
	got, err := d.Eval(ctx(t), sc, driver.NewKeys("{k}a", "{k}b"), "x", 7, int64(-9))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"{k}a", "{k}b", "x", "7", "-9", int64(2), int64(3)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}

// errorReply: a Redis error reply is an error, and not ErrNotSent.
func (s *suite) errorReply(t *testing.T) {
	d := s.driver(t, s.c.Addr)
	_, err := d.Eval(ctx(t), driver.NewScript("return redis.error_reply('ERR drivertest boom')"), driver.Keys{})
	if err == nil || !strings.Contains(err.Error(), "drivertest boom") {
		t.Fatalf("error reply: got %v", err)
	}
	if isNotSent(err) {
		t.Fatalf("an error reply from Redis wraps ErrNotSent: %v", err)
	}
}

// noScript: after SCRIPT FLUSH the next call still succeeds (EVALSHA, then
// EVAL on NOSCRIPT).
func (s *suite) noScript(t *testing.T) {
	d := s.driver(t, s.c.Addr)
	sc := driver.NewScript("return '" + unique("fresh-") + "'")
	for i := range 3 {
		if i == 1 {
			s.admin(t, "SCRIPT", "FLUSH")
		}
		if _, err := d.Eval(ctx(t), sc, driver.Keys{}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
}

// deadline: a call whose context ends while Redis is still running the
// script returns an error long before the script ends.
func (s *suite) deadline(t *testing.T) {
	d := s.driver(t, s.c.Addr)
	const busy = 2 * time.Second
	sc := driver.NewScript(`local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
repeat
	t = redis.call('TIME')
until t[1] * 1000000 + t[2] - start >= tonumber(ARGV[1])
return 1`)
	c, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err := d.Eval(c, sc, driver.Keys{}, busy.Microseconds())
	took := time.Since(begin)
	if err == nil {
		t.Fatal("a call past its context's deadline returned no error")
	}
	if took >= busy {
		t.Fatalf("the call returned after %v, when the script ended, not at its 100ms deadline", took)
	}
	// The driver still works once the server is free again.
	until(t, "a call after the busy script", func() bool {
		_, err := d.Eval(ctx(t), driver.NewScript("return 1"), driver.Keys{})
		return err == nil
	})
}

// cancelled: a call whose context has already ended sends nothing.
func (s *suite) cancelled(t *testing.T) {
	d := s.driver(t, s.c.Addr)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	key := unique("drivertest:cancelled:")
	_, err := d.Eval(c, driver.NewScript("return redis.call('SET', KEYS[1], 1)"), driver.NewKeys(key))
	if !isNotSent(err) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a call with a cancelled context: got %v, want ErrNotSent and context.Canceled", err)
	}
	if n, _ := s.admin(t, "EXISTS", key).(int64); n != 0 {
		t.Fatal("a call with a cancelled context reached Redis")
	}
}

// unreachable: a call to a server nobody listens on wraps ErrNotSent.
func (s *suite) unreachable(t *testing.T) {
	d := s.driver(t, closedAddr(t))
	_, err := d.Eval(ctx(t), driver.NewScript("return 1"), driver.Keys{})
	if !isNotSent(err) {
		t.Fatalf("a call to a closed port: got %v, want an error wrapping ErrNotSent", err)
	}
}

// concurrent: calls from many goroutines each get their own reply.
func (s *suite) concurrent(t *testing.T) {
	d := s.driver(t, s.c.Addr)
	key := unique("drivertest:incr:")
	sc := driver.NewScript("return redis.call('INCR', KEYS[1])")
	const n = 64
	var wg sync.WaitGroup
	got := make([]int64, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			v, err := d.Eval(ctx(t), sc, driver.NewKeys(key))
			got[i], _ = v.(int64)
			errs[i] = err
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if got[i] < 1 || got[i] > n || seen[got[i]] {
			t.Fatalf("replies mixed up: %v", got)
		}
		seen[got[i]] = true
	}
	if v := s.admin(t, "GET", key); string(v.([]byte)) != strconv.Itoa(n) {
		t.Fatalf("counter %s, want %d", v, n)
	}
}
