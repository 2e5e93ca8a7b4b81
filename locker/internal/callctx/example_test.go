package callctx_test

import (
	"context"
	"fmt"
	"time"

	"github.com/locktag/locktag/locker/internal/callctx"
)

// ExampleBounds_Call bounds a call by the call timeout, or keeps the
// caller's sooner deadline; Cleanup outlives the caller's cancellation.
func ExampleBounds_Call() {
	b := callctx.Bounds{Timeout: 2 * time.Second}
	ctx, _ := b.Call(context.Background())
	dl, _ := ctx.Deadline()
	fmt.Println(time.Until(dl) > time.Second)

	soon, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	ctx, _ = b.Call(soon)
	fmt.Println(ctx == soon)

	ended, stop := context.WithCancel(context.Background())
	stop()
	clean, done := b.Cleanup(ended)
	defer done()
	fmt.Println(ended.Err() != nil, clean.Err() == nil)
	// Output:
	// true
	// true
	// true true
}
