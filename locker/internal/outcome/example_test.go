package outcome_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/outcome"
)

// ExampleObtain: a cancelled wait is "canceled" even though it also
// matches ErrNotObtained.
func ExampleObtain() {
	fmt.Println(outcome.Obtain(1, nil), outcome.Obtain(2, nil))
	fmt.Println(outcome.Obtain(0, errors.Join(lockerr.ErrNotObtained, context.Canceled)))
	fmt.Println(outcome.Obtain(0, lockerr.ErrNotObtained), outcome.Rate(lockerr.ErrRateLimited))
	// Output:
	// acquired reentered
	// canceled
	// busy rate_limited
}
