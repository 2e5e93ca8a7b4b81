package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locktag/locktag/locker/guard/retry"
)

// A client of another transport follows the policy in a loop: one key for
// the operation, every attempt sends it, Wait decides whether and when to
// try again.
func Example() {
	p := retry.New(retry.WithBackoff(time.Millisecond, 10*time.Millisecond))
	key := p.NewKey()
	send := func(attempt int, key string) (string, retry.Class) { // the transport's call
		if attempt < 3 {
			return "", retry.Unavailable
		}
		return "done", retry.Done
	}
	ctx := context.Background()
	a := p.Begin()
	for {
		answer, class := send(a.N(), retry.FormatKey(key))
		if !p.Retries(class) {
			fmt.Println(answer, "after", a.N(), "attempts with one key")
			return
		}
		if err := a.Wait(ctx, class, 0, errors.New(class.String())); err != nil {
			fmt.Println(err)
			return
		}
	}
	// Output: done after 3 attempts with one key
}

func ExampleFormatKey() {
	fmt.Println(retry.FormatKey("order-42"))
	// Output: "order-42"
}
