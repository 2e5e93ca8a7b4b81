package multi_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/locktag/locktag/locker/internal/multi"
)

// ExampleTake takes three keys in their global order; the third is busy,
// so the two taken are undone, last first.
func ExampleTake() {
	keys := multi.Keys([]string{"acct:9", "acct:1", "acct:5", "acct:1"})
	fmt.Println(keys, multi.Check(keys))
	_, err := multi.Take(keys, 0, time.Now(), func(key string, _ time.Duration) (string, error) {
		if key == "acct:9" {
			return "", errors.New("busy")
		}
		fmt.Println("took", key)
		return key, nil
	}, func(key string) { fmt.Println("undid", key) })
	fmt.Println(err)
	// Output:
	// [acct:1 acct:5 acct:9] <nil>
	// took acct:1
	// took acct:5
	// undid acct:5
	// undid acct:1
	// busy
}
