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

// Shutdown tells every holder to stop (its lease's context ends with a
// cause matching ErrLockLost and ErrClosed), waits for them to release
// until its context ends, releases what is left and closes the Locker's
// connections. A worker that watches its lease hands the lock on at once.
func ExampleLocker_Shutdown() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	lease, err := lk.Obtain(ctx, "report:daily", locker.Params{})
	if err != nil {
		log.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { // the worker
		lctx := lease.Context()
		<-lctx.Done() // work until told to stop
		fmt.Println("worker stops:", errors.Is(context.Cause(lctx), locker.ErrClosed))
		stopped <- lease.Release(context.Background())
	}()

	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := lk.Shutdown(sctx); err != nil { // on SIGTERM; Close waits up to 1s
		log.Fatal(err)
	}
	fmt.Println("released by the worker:", <-stopped == nil)
	_, err = lk.Obtain(ctx, "report:daily", locker.Params{})
	fmt.Println(errors.Is(err, locker.ErrClosed))
	// Output:
	// worker stops: true
	// released by the worker: true
	// true
}
