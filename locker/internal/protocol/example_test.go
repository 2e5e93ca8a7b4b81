package protocol

import (
	"fmt"
	"time"
)

// ExampleParseReply reads acquire.lua's two reply shapes: the fence alone
// (a free lock taken with the whole ttl) and the full array.
func ExampleParseReply() {
	fast, _ := ParseReply(int64(7), 10*time.Second)
	busy, _ := ParseReply([]any{int64(0), int64(0), int64(0), int64(2500), int64(1700000000000)}, 10*time.Second)
	fmt.Println(fast.Status == StatusObtained, fast.Fence, fast.PTTL, fast.Fast)
	fmt.Println(busy.Status == StatusBusy, busy.PTTL)
	// Output:
	// true 7 10s true
	// true 2.5s
}

// ExampleNamed picks a script by its registry name, as tests that
// intercept calls do.
func ExampleNamed() {
	fmt.Println(Named(Acquire, "mutex_acquire"), Named(Release, "mutex_acquire"))
	// Output: true false
}
