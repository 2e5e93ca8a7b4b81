package locker_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// The README's "A Locker" section: one line on a redigo pool.
func ExampleNew() {
	pool := &redis.Pool{
		// The default pipelined driver only dials with the pool: one
		// connection for calls, one for notifications. For pooled calls
		// (redigo.WithPipelining(0)) add MaxIdle: 64, the default
		// WithMaxConcurrentCalls, so every call finds an idle connection.
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", exampleRedis.Addr(), // e.g. "localhost:6379"
				redis.DialReadTimeout(2*time.Second), redis.DialWriteTimeout(2*time.Second))
		},
	}
	defer pool.Close()

	lk, err := locker.New(redigo.New(pool)) // one per process; safe for concurrent use
	if err != nil {
		log.Fatal(err) // an invalid option: errors.Is(err, locker.ErrBadOption)
	}
	defer lk.Close()

	fmt.Println(lk.Ping(context.Background())) // New does not dial; Ping at start-up
	// Output: <nil>
}

// item and itemDB stand for the README's storage: a row that takes a
// fencing token before it is read (Claim) and is written only while that
// claim stands (Put).
type item struct {
	SKU   string
	Stock int
}

type itemDB struct {
	fence locker.Fence
	mu    sync.Mutex
	rows  map[string]item
}

func (db *itemDB) Claim(sku string, token int64) (item, error) {
	if err := db.fence.Claim(sku, token); err != nil {
		return item{}, err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.rows[sku], nil
}

func (db *itemDB) Put(_ context.Context, it item, token int64) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if err := db.fence.Check(it.SKU, token); err != nil {
		return err
	}
	db.rows[it.SKU] = it
	return nil
}

// buy is the README's "By hand, with fencing" snippet, verbatim.
func buy(ctx context.Context, lk *locker.Locker, db *itemDB, sku string) error {
	lease, err := lk.Obtain(ctx, "item:"+sku, locker.Params{Wait: 5 * time.Second})
	if err != nil {
		return err // errors.Is(err, locker.ErrNotObtained) when busy
	}
	defer lease.Release(ctx)
	ctx = lease.Context()                   // cancelled with cause locker.ErrLockLost if the lock is lost
	it, err := db.Claim(sku, lease.Token()) // the row takes the token before it is read; older tokens are refused
	if err != nil {
		return err // errors.Is(err, locker.ErrStaleToken): a newer holder has the row
	}
	it.Stock--
	err = db.Put(ctx, it, lease.Token()) // written only while the claim stands
	return err
}

func Example_byHand() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	db := &itemDB{rows: map[string]item{"plum": {SKU: "plum", Stock: 10}}}
	ctx := context.Background()

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := buy(ctx, lk, db, "plum"); err != nil {
				fmt.Println(err)
			}
		})
	}
	wg.Wait()
	fmt.Println(db.rows["plum"].Stock)
	// Output: 6
}
