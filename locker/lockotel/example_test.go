package lockotel_test

import (
	"context"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/lockotel"
	"github.com/locktag/locktag/locker/redigo"
)

// exampleAddr is a redis-server started for the examples by TestMain.
var exampleAddr string

func TestMain(m *testing.M) {
	redistest.Main(m, func(s *redistest.Server) { exampleAddr = s.Addr() })
}

func ExampleNew() {
	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", exampleAddr) }}
	defer pool.Close()
	// Spans and metrics go to the global providers (set by the SDK's
	// setup, otel.SetTracerProvider and otel.SetMeterProvider) or to
	// those lockotel.WithTracerProvider and WithMeterProvider give.
	lk, err := locker.New(redigo.New(pool), locker.WithObserver(lockotel.New()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()

	ctx := context.Background()
	lease, err := lk.Obtain(ctx, "order:42", locker.Params{Name: "POST /orders/:id/pay", TTL: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	// Work done with lease.Context() is traced inside the span locktag.hold.
	_ = lease.Context()
	fmt.Println("released:", lease.Release(ctx) == nil)
	// Output: released: true
}

func ExampleWithTracerProvider() {
	// A bad option is reported by locker.New.
	_, err := locker.New(redigo.New(&redis.Pool{}), locker.WithObserver(lockotel.New(lockotel.WithTracerProvider(nil))))
	fmt.Println(err)
	// Output: locker: bad option: lockotel.WithTracerProvider(nil): must not be nil
}

// ObserveServer exports what the Redis masters say about eviction and
// persistence, read at each collection.
func ExampleObserveServer() {
	lk, err := locker.New(redigo.New(&redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", exampleAddr) }}))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	reg, err := lockotel.ObserveServer(lk) // the global meter provider
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Unregister()
	facts, err := lk.ServerFacts(context.Background()) // what each collection reads
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(facts[0].Policy, facts[0].Evicting())
	// Output: noeviction false
}
