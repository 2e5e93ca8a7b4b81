package rueidis_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	lockrueidis "github.com/locktag/locktag/locker/rueidis"
)

// exampleAddr is a redis-server started for the examples by TestMain.
var exampleAddr string

func TestMain(m *testing.M) {
	redistest.Main(m, func(s *redistest.Server) { exampleAddr = s.Addr() })
}

func ExampleNew() {
	// One server here; a Cluster's nodes in InitAddress, or the sentinels
	// with ClientOption.Sentinel.MasterSet, the same way.
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{exampleAddr}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	lk, err := locker.New(lockrueidis.New(c))
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

func ExampleNewFromOption() {
	// The driver makes the client on first use and closes it with the
	// Locker: locker.New succeeds while Redis is still starting.
	lk, err := locker.New(lockrueidis.NewFromOption(rueidis.ClientOption{InitAddress: []string{exampleAddr}}))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()

	ctx := context.Background()
	lease, err := lk.Obtain(ctx, "invoice:7", locker.Params{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("fencing token above 0:", lease.Token() > 0)
	fmt.Println("released:", lease.Release(ctx) == nil)
	// Output:
	// fencing token above 0: true
	// released: true
}
