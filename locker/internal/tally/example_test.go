package tally_test

import (
	"errors"
	"fmt"

	"github.com/locktag/locktag/locker/internal/tally"
)

// ExampleCount tallies five masters' answers to a release: three released
// (a majority), one did not hold the lock, one failed.
func ExampleCount() {
	res := []tally.Reply{{V: int64(0)}, {V: int64(0)}, {V: int64(-1)}, {Err: errors.New("timeout")}, {V: int64(1)}}
	t := tally.Count("release", 3, res, func(_ int, v any) (bool, error) {
		x, _ := v.(int64)
		return x >= 0, nil
	})
	fmt.Println(t.Won(), t.Refused(), t.Broken(), t.Yes, t.No, t.Failed)
	// Output: true false false 3 1 1
}
