package gocronlock_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/job"
	"github.com/locktag/locktag/locker/job/gocronlock"
	"github.com/locktag/locktag/locker/redigo"
)

// Every replica's scheduler runs the job every minute; one replica runs
// each tick.
func ExampleNewLocker() {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()

	gl, err := gocronlock.NewLocker(lk, job.WithAtLeast(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(gl))
	if err != nil {
		log.Fatal(err)
	}
	ran := make(chan struct{})
	_, err = s.NewJob(gocron.DurationJob(time.Minute),
		gocron.NewTask(func() { fmt.Println("stock report"); close(ran) }),
		gocron.WithName("job:stock-report"), // the lock's name
		gocron.WithStartAt(gocron.WithStartImmediately()),
		gocron.WithLimitedRuns(1))
	if err != nil {
		log.Fatal(err)
	}
	s.Start()
	<-ran
	_ = s.Shutdown()
	// Output: stock report
}

// Only the leader's scheduler runs jobs. The Elector campaigns in the
// background for as long as the service runs (here: it is elected at once).
func ExampleNewElector() {
	lk, err := locker.New(redigo.New(exampleRedis.NewPool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()

	el, err := job.NewElector(lk, "leader:scheduler")
	if err != nil {
		log.Fatal(err)
	}
	term, err := el.Campaign(context.Background()) // a service: go el.Run(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer term.Resign(context.Background())

	s, err := gocron.NewScheduler(gocron.WithDistributedElector(gocronlock.NewElector(el)))
	if err != nil {
		log.Fatal(err)
	}
	ran := make(chan struct{})
	_, err = s.NewJob(gocron.DurationJob(time.Minute),
		gocron.NewTask(func() { fmt.Println("leader's report"); close(ran) }),
		gocron.WithStartAt(gocron.WithStartImmediately()),
		gocron.WithLimitedRuns(1))
	if err != nil {
		log.Fatal(err)
	}
	s.Start()
	<-ran
	_ = s.Shutdown()
	// Output: leader's report
}
