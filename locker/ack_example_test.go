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

// WithReplicaAck on a master without replicas: nothing acknowledges the
// lock, so Obtain releases it and reports the deployment unavailable
// (503), not the lock busy.
func ExampleWithReplicaAck() {
	lk, err := locker.New(redigo.New(examplePool()), locker.WithReplicaAck(1, 50*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	_, err = lk.Obtain(context.Background(), "order:42", locker.Params{})
	fmt.Println(errors.Is(err, locker.ErrNotReplicated), errors.Is(err, locker.ErrUnavailable), errors.Is(err, locker.ErrNotObtained))
	fmt.Println(err)
	// Output:
	// true true false
	// locker: not acknowledged by replicas: 0 of 1 replicas within 50ms
}
