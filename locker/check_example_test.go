package locker_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// A start-up check: Check confirms that the server, as the user the pool
// logs in as, allows scripting, pub/sub and the scripts' commands
// (Ping runs it too, once).
func ExampleLocker_Check() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	switch err := lk.Check(ctx); {
	case errors.Is(err, locker.ErrUnsupported):
		fmt.Println("this Redis cannot serve locks:", err) // names what to allow
	case err != nil:
		fmt.Println("Redis unreachable:", err)
	default:
		fmt.Println("ready")
	}
	// Output: ready
}

// The ACL rules a Redis user needs for this Locker, for a deployment
// script to print.
func ExampleLocker_ACLRules() {
	lk, err := locker.New(redigo.New(examplePool()), locker.WithKeyPrefix("shop:"))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	rules := lk.ACLRules()
	fmt.Println("ACL SETUSER shop on >PASSWORD " + strings.Join(rules[:6], " ") + " ...")
	// Output: ACL SETUSER shop on >PASSWORD resetkeys ~shop:* resetchannels &shop:* &locktag:listener* -@all ...
}

// A Redis shared with a cache that evicts: Check refuses it with
// ErrEvictionPolicy unless the risk is accepted, and then Risks names it
// (the ops page shows it too).
func ExampleWithEvictionAllowed() {
	lk, err := locker.New(redigo.New(examplePool()), locker.WithEvictionAllowed())
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	if err := lk.Check(context.Background()); errors.Is(err, locker.ErrEvictionPolicy) {
		fmt.Println("refused:", err) // not with WithEvictionAllowed
	}
	fmt.Println(len(lk.Risks()), "risks accepted") // the example server has no maxmemory
	// Output: 0 risks accepted
}
