package redigo_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// exampleRedis is a redis-server started for the examples by TestMain.
var exampleRedis *redistest.Server

func TestMain(m *testing.M) {
	redistest.Main(m, func(s *redistest.Server) { exampleRedis = s })
}

// examplePool is a pool to it, as a service would configure one.
func examplePool() *redis.Pool { return exampleRedis.NewPool() }

// A Locker on a redigo pool is one line.
func ExampleNew() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	fmt.Println(lk.Ping(context.Background()))
	// Output: <nil>
}

// By default calls from concurrent goroutines share one pipelined
// connection and its system calls; WithPipelining(0) takes a pooled
// connection per call instead.
func ExampleWithPipelining() {
	lk, err := locker.New(redigo.New(examplePool())) // = redigo.WithPipelining(1)
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ctx := context.Background()

	var wg sync.WaitGroup
	var obtained atomic.Int32
	for i := range 8 {
		wg.Go(func() {
			lease, err := lk.Obtain(ctx, fmt.Sprintf("order:%d", i), locker.Params{TTL: 10 * time.Second})
			if err != nil {
				return
			}
			obtained.Add(1)
			_ = lease.Release(ctx)
		})
	}
	wg.Wait()
	fmt.Println(obtained.Load())

	// Pooled calls: one pooled connection per call in flight.
	pooled, err := locker.New(redigo.New(examplePool(), redigo.WithPipelining(0)))
	if err != nil {
		log.Fatal(err)
	}
	defer pooled.Close()
	fmt.Println(pooled.Ping(ctx))
	// Output:
	// 8
	// <nil>
}

// A bad driver option is an error of the Locker's constructor.
func ExampleWithStallTimeout() {
	_, err := locker.New(redigo.New(examplePool(), redigo.WithStallTimeout(0)))
	fmt.Println(err)
	// Output: locker: bad option: redigo.WithStallTimeout(0s): must be positive
}
