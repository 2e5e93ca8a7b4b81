package locker_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

// offline is a driver whose pool must never dial: building a Locker does
// not touch Redis.
func offline(t *testing.T) driver.Driver {
	return redigo.New(&redis.Pool{Dial: func() (redis.Conn, error) {
		t.Error("building a Locker dialled Redis")
		return nil, errors.New("offline")
	}})
}

func TestOptionErrors(t *testing.T) {
	tests := []struct {
		name    string
		opts    []locker.Option
		redlock bool
		want    string // "" : valid
	}{
		{"defaults", nil, false, ""},
		{"all valid", []locker.Option{locker.WithKeyPrefix("app:"), locker.WithWatchdog(time.Second, 300*time.Millisecond),
			locker.WithCallTimeout(time.Second), locker.WithUnsubscribeDelay(0), locker.WithGrantWindow(time.Second),
			locker.WithMaxConcurrentCalls(0), locker.WithKeyAttribute(true)}, false, ""},
		{"redlock options on Redlock", []locker.Option{locker.WithDriftFactor(0), locker.WithNodeTimeout(time.Second)}, true, ""},
		{"prefix with a brace", []locker.Option{locker.WithKeyPrefix("a{b")}, false, "WithKeyPrefix"},
		{"watchdog renews too late", []locker.Option{locker.WithWatchdog(time.Second, time.Second)}, false, "WithWatchdog"},
		{"watchdog without renewals", []locker.Option{locker.WithWatchdog(time.Second, 0)}, false, "WithWatchdog"},
		{"watchdog without lease", []locker.Option{locker.WithWatchdog(0, time.Second)}, false, "WithWatchdog"},
		{"call timeout", []locker.Option{locker.WithCallTimeout(0)}, false, "WithCallTimeout"},
		{"unsubscribe delay", []locker.Option{locker.WithUnsubscribeDelay(-time.Second)}, false, "WithUnsubscribeDelay"},
		{"grant window", []locker.Option{locker.WithGrantWindow(0)}, false, "WithGrantWindow"},
		{"max calls", []locker.Option{locker.WithMaxConcurrentCalls(-1)}, false, "WithMaxConcurrentCalls"},
		{"observer", []locker.Option{locker.WithObserver(nil)}, false, "WithObserver"},
		{"logger", []locker.Option{locker.WithLogger(nil)}, false, "WithLogger"},
		{"nil option", []locker.Option{nil}, false, "nil Option"},
		{"drift factor", []locker.Option{locker.WithDriftFactor(0.5)}, true, "WithDriftFactor"},
		{"node timeout", []locker.Option{locker.WithNodeTimeout(0)}, true, "WithNodeTimeout"},
		{"drift factor on New", []locker.Option{locker.WithDriftFactor(0.01)}, false, "WithDriftFactor applies to NewRedlock only"},
		{"node timeout on New", []locker.Option{locker.WithNodeTimeout(time.Second)}, false, "WithNodeTimeout applies to NewRedlock only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var lk *locker.Locker
			var err error
			if tc.redlock {
				lk, err = locker.NewRedlock([]driver.Driver{offline(t), offline(t), offline(t)}, tc.opts...)
			} else {
				lk, err = locker.New(offline(t), tc.opts...)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("valid options refused: %v", err)
				}
				_ = lk.Close()
				return
			}
			if lk != nil || !errors.Is(err, locker.ErrBadOption) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want an error wrapping ErrBadOption naming %q", lk, err, tc.want)
			}
		})
	}
}

// Every bad option is reported, not only the first.
func TestOptionErrorsAreAllReported(t *testing.T) {
	_, err := locker.New(offline(t), locker.WithCallTimeout(0), locker.WithGrantWindow(-1), locker.WithNodeTimeout(time.Second))
	for _, name := range []string{"WithCallTimeout", "WithGrantWindow", "WithNodeTimeout"} {
		if !strings.Contains(fmt.Sprint(err), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}

func TestDriverErrors(t *testing.T) {
	tests := []struct {
		name string
		new  func() (*locker.Locker, error)
		want string
	}{
		{"nil driver", func() (*locker.Locker, error) { return locker.New(nil) }, "nil driver"},
		{"nil pool", func() (*locker.Locker, error) { return locker.New(redigo.New(nil)) }, "nil pool"},
		{"bad driver option", func() (*locker.Locker, error) {
			return locker.New(redigo.New(&redis.Pool{}, redigo.WithPipelining(-1)))
		}, "redigo.WithPipelining(-1)"},
		{"no masters", func() (*locker.Locker, error) { return locker.NewRedlock(nil) }, "no drivers"},
		{"nil master", func() (*locker.Locker, error) {
			return locker.NewRedlock([]driver.Driver{offline(t), nil, offline(t)})
		}, "master 1: locker: bad option: nil driver"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lk, err := tc.new()
			if lk != nil || !errors.Is(err, locker.ErrBadOption) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want an error wrapping ErrBadOption with %q", lk, err, tc.want)
			}
		})
	}
}

// The driver's sentinels are the locker's: errors.Is works with either.
func TestSentinelsReexported(t *testing.T) {
	for _, tc := range []struct{ a, b error }{
		{locker.ErrNotSent, driver.ErrNotSent},
		{locker.ErrPoolExhausted, driver.ErrPoolExhausted},
		{locker.ErrBadOption, driver.ErrBadOption},
	} {
		if tc.a != tc.b {
			t.Errorf("%v is not %v", tc.a, tc.b)
		}
	}
}

// A mistaken option is an error of New that names it; nothing is
// corrected silently.
func ExampleNew_badOption() {
	_, err := locker.New(redigo.New(examplePool()), locker.WithWatchdog(10*time.Second, 30*time.Second))
	fmt.Println(errors.Is(err, locker.ErrBadOption))
	fmt.Println(err)
	// Output:
	// true
	// locker: bad option: WithWatchdog(10s, 30s): need 0 < renewEvery < lease
}
