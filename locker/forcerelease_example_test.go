package locker_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// An operator frees a lock whose holder is stuck. The holder's context is
// cancelled with a cause naming the reason; the lock goes to the next
// waiter as on a release.
func ExampleLocker_ForceRelease() {
	quiet := locker.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError + 1})))
	lk, err := locker.New(redigo.New(examplePool()), quiet)
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ctx := context.Background()

	lease, err := lk.Obtain(ctx, "report:2026-11", locker.Params{})
	if err != nil {
		log.Fatal(err)
	}
	work := lease.Context()

	// The ops page names the operator in the context, for the audit record.
	err = lk.ForceRelease(locker.WithActor(ctx, "alice"), "report:2026-11", "job hung on a dead NFS mount")
	fmt.Println(err)

	<-work.Done()
	cause := context.Cause(work)
	fmt.Println(errors.Is(cause, locker.ErrLockLost), errors.Is(cause, locker.ErrForceReleased))
	fmt.Println(cause)
	fmt.Println(errors.Is(lease.Release(ctx), locker.ErrNotHeld))
	fmt.Println(errors.Is(lk.ForceRelease(ctx, "report:2026-11", "again"), locker.ErrNotHeld))
	// Output:
	// <nil>
	// true true
	// locker: lock lost: force-released: job hung on a dead NFS mount
	// true
	// true
}
