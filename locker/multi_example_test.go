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

// A transfer locks both accounts, whichever way round it names them: a
// transfer the other way waits for it instead of deadlocking, and a
// deposit to either account is excluded meanwhile.
func ExampleLocker_ObtainMany() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ctx := context.Background()

	lease, err := lk.ObtainMany(ctx, []string{"acct:7", "acct:3"}, locker.Params{Wait: time.Second})
	if err != nil {
		fmt.Println("not locked:", err)
		return
	}
	fmt.Println(lease.Keys())
	_, err = lk.Obtain(ctx, "acct:3", locker.Params{})
	fmt.Println("deposit to acct:3 busy:", errors.Is(err, locker.ErrNotObtained))
	if err := lease.Release(ctx); err != nil {
		fmt.Println(err)
	}

	// The same account twice is one lock.
	same, err := lk.ObtainMany(ctx, []string{"acct:3", "acct:3"}, locker.Params{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer same.Release(ctx)
	fmt.Println(same.Keys())
	// Output:
	// [acct:3 acct:7]
	// deposit to acct:3 busy: true
	// [acct:3]
}
