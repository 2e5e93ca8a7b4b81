package lockerr_test

import (
	"errors"
	"fmt"

	"github.com/locktag/locktag/locker/internal/lockerr"
)

// ExampleUnavailable wraps a Redis failure so it matches ErrUnavailable,
// and a call never sent so it matches ErrNotSent too.
func ExampleUnavailable() {
	err := lockerr.Unavailable(lockerr.NotSent(errors.New("no connection")))
	fmt.Println(errors.Is(err, lockerr.ErrUnavailable), errors.Is(err, lockerr.ErrNotSent))
	fmt.Println(err)
	// Output:
	// true true
	// locker: redis unavailable: locker: call not sent: no connection
}
