package locktest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/locktest"
)

// In a test, locktest.New(t); here a Standalone stands in for the test.
func Example() {
	var t locktest.Standalone
	defer t.Close()
	k := locktest.New(&t)
	ctx := context.Background()

	key := k.Key(`key:"order:{path.id}"`, locktest.Values{"path.id": "42"})
	release := k.Hold(key) // another process holds it
	_, err := k.Locker().Obtain(ctx, key, locker.Params{})
	fmt.Println(key, "held elsewhere:", errors.Is(err, locker.ErrNotObtained))
	release()

	le, err := k.Locker().Obtain(ctx, key, locker.Params{})
	if err != nil {
		panic(err)
	}
	k.Lose(key) // the lease is lost now
	fmt.Println("lost:", errors.Is(context.Cause(le.Context()), locker.ErrLockLost))

	k.Down() // Redis goes away
	_, err = k.Locker().Obtain(ctx, key, locker.Params{})
	fmt.Println("Redis down:", errors.Is(err, locker.ErrUnavailable))
	k.Up()
	// Output:
	// order:42 held elsewhere: true
	// lost: true
	// Redis down: true
}

// A rate tag's key used up, and the embedded server's clock moved on by
// one request's share of the period (a minute of "60/1h").
func ExampleKit_Advance() {
	var t locktest.Standalone
	defer t.Close()
	k := locktest.New(&t, locktest.WithEmbedded()) // Advance needs miniredis
	const tag = `key:"api:{header.X-User}" rate:"60/1h"`
	user := locktest.Values{"header.X-User": "alice"}
	p := locker.RateParams{Limit: 60, Period: time.Hour}

	k.ExhaustRate(tag, user)
	_, err := k.Locker().Allow(context.Background(), k.Key(tag, user), p)
	fmt.Println("used up:", errors.Is(err, locker.ErrRateLimited))

	k.Advance(time.Minute)
	_, err = k.Locker().Allow(context.Background(), k.Key(tag, user), p)
	fmt.Println("a minute later:", err)
	// Output:
	// used up: true
	// a minute later: <nil>
}
