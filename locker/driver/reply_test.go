package driver_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/locktag/locktag/locker/driver"
)

func ExampleNormalizeReply() {
	v := driver.NormalizeReply([]any{int64(1), []byte("two"), true, false, nil})
	fmt.Printf("%#v\n", v)
	// Output: []interface {}{1, "two", 1, interface {}(nil), interface {}(nil)}
}

func ExampleNotSent() {
	err := driver.NotSent(context.DeadlineExceeded)
	fmt.Println(err, errors.Is(err, driver.ErrNotSent), errors.Is(err, context.DeadlineExceeded))
	fmt.Println(driver.NotSent(err) == err)
	// Output:
	// locker: call not sent: context deadline exceeded true true
	// true
}

func ExampleKeepAlive() {
	n := 0
	err := driver.KeepAlive(time.Millisecond, make(chan struct{}), func() error {
		if n++; n == 3 {
			return errors.New("no PONG")
		}
		return nil
	})
	fmt.Println(n, err)
	// Output: 3 no PONG
}

func TestNormalizeReply(t *testing.T) {
	redisErr := errors.New("ERR nested")
	for _, tc := range []struct {
		in, want any
	}{
		{int64(42), int64(42)},
		{"text", "text"},
		{[]byte("bytes"), "bytes"},
		{nil, nil},
		{true, int64(1)},
		{false, nil},
		{[]any{}, []any{}},
		{[]any{[]any{[]byte("a"), true}, redisErr}, []any{[]any{"a", int64(1)}, redisErr}},
		{3.5, 3.5},
	} {
		if got := driver.NormalizeReply(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("NormalizeReply(%#v) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
	// Arrays are converted in place.
	a := []any{[]byte("x")}
	driver.NormalizeReply(a)
	if a[0] != "x" {
		t.Fatalf("array not converted in place: %#v", a)
	}
}

func TestNotSent(t *testing.T) {
	cause := errors.New("dial tcp: refused")
	err := driver.NotSent(cause)
	if !errors.Is(err, driver.ErrNotSent) || !errors.Is(err, cause) {
		t.Fatalf("NotSent(%v) = %v: does not match both", cause, err)
	}
	if want := fmt.Errorf("%w: %w", driver.ErrNotSent, cause).Error(); err.Error() != want {
		t.Fatalf("message %q, want %q", err.Error(), want)
	}
	if again := driver.NotSent(err); again != err {
		t.Fatalf("NotSent wrapped a not-sent error again: %v", again)
	}
}

// TestKeepAlive: pings every interval until done is closed, and stops at
// the first failed ping, returning its error.
func TestKeepAlive(t *testing.T) {
	done := make(chan struct{})
	pings := make(chan struct{}, 10)
	ret := make(chan error, 1)
	go func() {
		ret <- driver.KeepAlive(time.Millisecond, done, func() error {
			pings <- struct{}{}
			return nil
		})
	}()
	for range 3 {
		<-pings
	}
	close(done)
	if err := <-ret; err != nil {
		t.Fatalf("KeepAlive after done: %v", err)
	}

	boom := errors.New("boom")
	n := 0
	err := driver.KeepAlive(time.Millisecond, make(chan struct{}), func() error {
		if n++; n == 2 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || n != 2 {
		t.Fatalf("KeepAlive returned %v after %d pings, want boom after 2", err, n)
	}
}
