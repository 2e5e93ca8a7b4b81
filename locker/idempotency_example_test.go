package locker_test

import (
	"context"
	"fmt"
	"log"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// A payment guarded by the client's idempotency key: the first call
// executes and stores its outcome, the retry replays it.
func ExampleLocker_Idempotent() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ctx := context.Background()
	name := locker.IdempotencyName("POST /payments", "customer:42", "8e03978e-40d5-43e8-bc93")
	pay := func(body string) string {
		claim, err := lk.Idempotent(ctx, name, body, locker.IdempotencyParams{})
		if err != nil {
			return err.Error() // ErrInFlight, ErrMismatch or ErrUnavailable
		}
		if out, ok := claim.Replay(); ok {
			return "replayed: " + string(out)
		}
		defer claim.Abandon(ctx) // on panic; a no-op after Complete
		receipt := "charged " + body
		if err := claim.Complete(ctx, []byte(receipt)); err != nil {
			return err.Error()
		}
		return receipt
	}
	fmt.Println(pay("10 EUR"))
	fmt.Println(pay("10 EUR"))
	fmt.Println(pay("99 EUR"))
	// Output:
	// charged 10 EUR
	// replayed: charged 10 EUR
	// locker: idempotency key reused with a different request
}
