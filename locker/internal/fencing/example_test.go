package fencing_test

import (
	"fmt"

	"github.com/locktag/locktag/locker/internal/fencing"
)

// ExampleState: the holder with token 33 lost its lock to token 34; its
// late write fails the check.
func ExampleState() {
	var s fencing.State
	fmt.Println(s.Claim(33))
	fmt.Println(s.Claim(34))
	fmt.Println(s.Check(33))
	fmt.Println(s.Check(34))
	// Output:
	// <nil>
	// <nil>
	// locker: stale fencing token
	// <nil>
}
