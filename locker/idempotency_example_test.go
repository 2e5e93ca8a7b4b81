package locker_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// An operator reads a record without claiming it: in flight while the
// first call executes, then done with its outcome stored. The fingerprint
// is the SHA-256 of the one Idempotent was given; the outcome is not
// shown.
func ExampleLocker_InspectIdempotency() {
	lk, err := locker.New(redigo.New(examplePool()), locker.WithKeyPrefix("example-idem-inspect:"))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ctx := context.Background()
	name := locker.IdempotencyName("POST /payments", "customer:42", "8e03978e-40d5-43e8-bc93")
	show := func() {
		st, ok, err := lk.InspectIdempotency(ctx, name)
		if err != nil {
			log.Fatal(err) // ErrUnavailable, ErrProtocol
		}
		if !ok {
			fmt.Println("no record")
			return
		}
		sum := sha256.Sum256([]byte("10 EUR"))
		fmt.Printf("%s, fingerprint %v, owner %v, expires %v, %d waiting\n", st.State,
			st.Fingerprint == hex.EncodeToString(sum[:]), st.Owner != "", st.ExpiresIn > 0, st.Waiting)
	}
	show()
	claim, err := lk.Idempotent(ctx, name, "10 EUR", locker.IdempotencyParams{})
	if err != nil {
		log.Fatal(err)
	}
	show()
	if err := claim.Complete(ctx, []byte("charged 10 EUR")); err != nil {
		log.Fatal(err)
	}
	show()
	// Output:
	// no record
	// in flight, fingerprint true, owner true, expires true, 0 waiting
	// done, fingerprint true, owner false, expires true, 0 waiting
}
