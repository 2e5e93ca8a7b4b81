package locker_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// At most 2 requests a minute per user: the third is refused and told
// when to come back (the next slot, 30s after the first two).
func ExampleLocker_Allow() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ctx := context.Background()
	p := locker.RateParams{Limit: 2, Period: time.Minute}

	for range 3 {
		d, err := lk.Allow(ctx, "api:user-7", p)
		switch {
		case errors.Is(err, locker.ErrRateLimited):
			fmt.Println("refused, retry after", d.RetryAfter.Round(time.Second))
		case err != nil:
			fmt.Println(err)
		default:
			fmt.Println("admitted,", d.Remaining, "left")
		}
	}
	// Output:
	// admitted, 1 left
	// admitted, 0 left
	// refused, retry after 30s
}
