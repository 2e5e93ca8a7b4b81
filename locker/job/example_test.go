package job_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync/atomic"
	"time"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/job"
	"github.com/locktag/locktag/locker/redigo"
)

// exampleLocker returns a Locker on the examples' Redis under a key prefix
// of its own, so an example run again (go test -count) starts afresh.
func exampleLocker() *locker.Locker {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()),
		locker.WithKeyPrefix(fmt.Sprintf("example%d:", examples.Add(1))))
	if err != nil {
		log.Fatal(err)
	}
	return lk
}

var examples atomic.Int64

// Every replica calls Run on each tick of its own schedule; one runs the
// job, the others are skipped. WithAtLeast keeps the lock a while after a
// short run, so a replica whose tick comes a little later skips that tick
// too.
func ExampleJob_Run() {
	lk := exampleLocker() // one Locker per process: locker.New(redigo.New(pool))
	defer lk.Close()
	report, err := job.New(lk, "job:stock-report", job.WithAtLeast(2*time.Second))
	if err != nil {
		log.Fatal(err) // an invalid option: errors.Is(err, locker.ErrBadOption)
	}
	ctx := context.Background()

	err = report.Run(ctx, func(ctx context.Context, token int64) error {
		// ctx is cancelled if the lock is lost; token fences the writes.
		fmt.Println("report written")
		return nil
	})
	fmt.Println("first tick:", err)

	// The same tick on a replica whose clock is a little behind.
	err = report.Run(ctx, func(context.Context, int64) error {
		fmt.Println("never printed")
		return nil
	})
	fmt.Println("late tick skipped:", errors.Is(err, job.ErrSkipped))
	// Output:
	// report written
	// first tick: <nil>
	// late tick skipped: true
}

// Run builds the job for one call, for a call site that runs it rarely.
func ExampleRun() {
	lk := exampleLocker() // one Locker per process: locker.New(redigo.New(pool))
	defer lk.Close()
	err := job.Run(context.Background(), lk, "job:nightly-cleanup", func(ctx context.Context, token int64) error {
		fmt.Println("cleaned up")
		return nil
	}, job.WithAtMost(10*time.Minute))
	fmt.Println(err)
	// Output:
	// cleaned up
	// <nil>
}

// Lock and Unlock split a run for a scheduler that calls hooks around the
// work (as gocronlock does for go-co-op/gocron).
func ExampleJob_Lock() {
	lk := exampleLocker() // one Locker per process: locker.New(redigo.New(pool))
	defer lk.Close()
	sync, err := job.New(lk, "job:sync")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	l, err := sync.Lock(ctx)
	if err != nil {
		fmt.Println("skipped:", errors.Is(err, job.ErrSkipped))
		return
	}
	_, err = sync.Lock(ctx) // another run meanwhile
	fmt.Println("second run skipped:", errors.Is(err, job.ErrSkipped))
	fmt.Println("token > 0:", l.Token() > 0, "lost:", l.Lost())
	fmt.Println("unlock:", l.Unlock(ctx))
	// Output:
	// second run skipped: true
	// token > 0: true lost: false
	// unlock: <nil>
}

// Run leads while the process lives: lead gets a context that is cancelled
// the moment leadership is lost, and the term's fencing token.
func ExampleElector_Run() {
	lk := exampleLocker() // one Locker per process: locker.New(redigo.New(pool))
	defer lk.Close()
	el, err := job.NewElector(lk, "leader:billing")
	if err != nil {
		log.Fatal(err)
	}
	ctx, shutdown := context.WithCancel(context.Background())

	err = el.Run(ctx, func(ctx context.Context, t job.Term) error {
		fmt.Println("leading:", el.IsLeader(), "token > 0:", t.Token() > 0)
		shutdown() // here: the process shuts down at once
		<-ctx.Done()
		return nil
	})
	fmt.Println(err, "leading:", el.IsLeader())
	// Output:
	// leading: true token > 0: true
	// context canceled leading: false
}

// A deposed leader's writes are refused by storage that checks the term's
// token: here a locker.Fenced value.
func ExampleTerm_Token() {
	lk := exampleLocker() // one Locker per process: locker.New(redigo.New(pool))
	defer lk.Close()
	a, _ := job.NewElector(lk, "leader:ledger")
	b, _ := job.NewElector(lk, "leader:ledger")
	ctx := context.Background()
	ledger := locker.NewFenced(0)

	ta, err := a.Campaign(ctx)
	if err != nil {
		log.Fatal(err)
	}
	_, _ = ledger.Update(ta.Token(), func(v int) (int, error) { return v + 1, nil })
	_ = ta.Resign(ctx) // here: resigned; a lost term is the same to the ledger

	tb, err := b.Campaign(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tb.Resign(ctx)
	_, _ = ledger.Update(tb.Token(), func(v int) (int, error) { return v + 1, nil })

	err = ledger.Store(ta.Token(), 100) // the old leader, still writing
	fmt.Println(errors.Is(err, locker.ErrStaleToken))
	// Output: true
}
