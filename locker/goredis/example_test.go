package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/goredis"
)

// exampleAddr is a redis-server started for the examples by TestMain.
var exampleAddr string

func TestMain(m *testing.M) {
	redistest.Main(m, func(s *redistest.Server) { exampleAddr = s.Addr() })
}

func ExampleNew() {
	// Any go-redis UniversalClient: a plain client here; a ClusterClient or
	// a FailoverClient (Sentinel) the same way.
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:                 []string{exampleAddr},
		ContextTimeoutEnabled: true, // the locker's deadlines reach the socket
		MaxRetries:            -1,   // failures go to the locker, which cleans up by token
	})
	defer rdb.Close()
	lk, err := locker.New(goredis.New(rdb))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()

	ctx := context.Background()
	lease, err := lk.Obtain(ctx, "order:42", locker.Params{TTL: 10 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = lk.Obtain(ctx, "order:42", locker.Params{})
	fmt.Println("second caller:", errors.Is(err, locker.ErrNotObtained))
	fmt.Println("released:", lease.Release(ctx) == nil)
	// Output:
	// second caller: true
	// released: true
}
