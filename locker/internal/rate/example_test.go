package rate_test

import (
	"fmt"
	"time"

	"github.com/locktag/locktag/locker/internal/rate"
)

// ExampleCheck refuses terms the script could not count exactly.
func ExampleCheck() {
	fmt.Println(rate.Check(100, time.Second, 0, 0))
	fmt.Println(rate.Check(2000, time.Millisecond, 0, 0))
	fmt.Println(rate.Key("locktag:", "api:alice"))
	// Output:
	// <nil>
	// locker: bad rate: 2000 per 1ms: more than one request per microsecond
	// locktag:{api:alice}:rate
}
