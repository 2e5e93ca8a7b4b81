package locker_test

import (
	"context"
	"errors"
	"fmt"
	"log"
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

func ExampleLocker_Obtain() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ctx := context.Background()

	lease, err := lk.Obtain(ctx, "order:42", locker.Params{TTL: 10 * time.Second, Wait: 2 * time.Second})
	if err != nil {
		fmt.Println("not locked:", err)
		return
	}
	defer lease.Release(ctx)

	// Someone else (here: a call without the lease in its context) is refused.
	_, err = lk.Obtain(ctx, "order:42", locker.Params{})
	fmt.Println(errors.Is(err, locker.ErrNotObtained))
	// Output: true
}

func ExampleLease_Context() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ctx := context.Background()

	outer, err := lk.Obtain(ctx, "cart:7", locker.Params{})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Code further down gets the lease from the context, and a nested Obtain
	// with that context re-enters the lock instead of deadlocking.
	work := func(ctx context.Context) {
		inner, err := lk.Obtain(ctx, "cart:7", locker.Params{})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer inner.Release(ctx)
		fmt.Println("holds:", inner.Holds(), "same fencing token:", inner.Token() == locker.FromContext(ctx).Token())
	}
	work(outer.Context())
	fmt.Println("released:", outer.Release(ctx) == nil)
	// Output:
	// holds: 2 same fencing token: true
	// released: true
}

func ExampleFence() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ctx := context.Background()
	var stock locker.Fence // the storage side remembers the largest token

	first, _ := lk.Obtain(ctx, "sku:9", locker.Params{TTL: 50 * time.Millisecond})
	<-first.Context().Done() // paused past its lease: the lock is lost
	second, _ := lk.Obtain(ctx, "sku:9", locker.Params{Wait: time.Second})
	defer second.Release(ctx)

	fmt.Println("new holder writes:", stock.Admit("sku:9", second.Token()))
	fmt.Println("old holder writes:", stock.Admit("sku:9", first.Token()))
	// Output:
	// new holder writes: <nil>
	// old holder writes: locker: stale fencing token
}
