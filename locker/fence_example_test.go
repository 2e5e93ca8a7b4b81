package locker_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// pausedHolder returns a lease on key that has been lost, as if its holder
// had been paused past its lease, and the lease of the holder after it.
func pausedHolder(lk *locker.Locker, key string) (old, next *locker.Lease, err error) {
	ctx := context.Background()
	old, err = lk.Obtain(ctx, key, locker.Params{TTL: 300 * time.Millisecond})
	if err != nil {
		return nil, nil, err
	}
	<-old.Context().Done() // the lease ran out: the lock is lost
	next, err = lk.Obtain(ctx, key, locker.Params{Wait: time.Second})
	return old, next, err
}

// A read-modify-write fenced on both steps: each holder claims the row
// before reading it, and writes only if its claim still stands. Holder A is
// paused between its read and its write; B reads the same stock meanwhile.
// With write-only fencing (Admit) both writes would be admitted and a sale
// lost; with Claim, A's write is refused.
func ExampleFence_Claim() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ctx := context.Background()

	// The protected row. Each closure is one atomic storage step: in SQL,
	// one UPDATE ... RETURNING, and one UPDATE ... WHERE fence = $token.
	var fence locker.Fence
	qty := 5
	read := func(token int64) (int, error) {
		if err := fence.Claim("sku:7", token); err != nil {
			return 0, err
		}
		return qty, nil
	}
	write := func(token int64, v int) error {
		if err := fence.Check("sku:7", token); err != nil {
			return err
		}
		qty = v
		return nil
	}

	a, err := lk.Obtain(ctx, "sku:7", locker.Params{TTL: 50 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	qa, err := read(a.Token())
	fmt.Println("A reads:", qa, err)
	<-a.Context().Done() // A is paused past its lease: the lock is lost

	b, err := lk.Obtain(ctx, "sku:7", locker.Params{Wait: time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Release(ctx)
	qb, err := read(b.Token())
	fmt.Println("B reads:", qb, err)

	fmt.Println("A writes:", write(a.Token(), qa-1)) // A resumes
	fmt.Println("B writes:", write(b.Token(), qb-1))
	fmt.Println("qty:", qty)
	// Output:
	// A reads: 5 <nil>
	// B reads: 5 <nil>
	// A writes: locker: stale fencing token
	// B writes: <nil>
	// qty: 4
}

// A counter that only lock holders can update: every Update carries the
// lease's fencing token, and a holder that lost the lock is refused.
func ExampleFenced_Update() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ctx := context.Background()
	var visits locker.Fenced[int]
	increment := func(n int) (int, error) { return n + 1, nil }

	var first int64
	for i := range 3 {
		lease, err := lk.Obtain(ctx, "visits", locker.Params{Wait: time.Second})
		if err != nil {
			fmt.Println(err)
			return
		}
		if i == 0 {
			first = lease.Token()
		}
		n, err := visits.Update(lease.Token(), increment)
		fmt.Println(n, err)
		_ = lease.Release(ctx)
	}
	_, err = visits.Update(first, increment) // the first holder, late
	fmt.Println(err)
	// Output:
	// 1 <nil>
	// 2 <nil>
	// 3 <nil>
	// locker: stale fencing token
}

// sellScript takes ARGV[2] units from the stock hash KEYS[1] (fields qty
// and fence) for the holder of fencing token ARGV[1]: the fence check, the
// read and the write are one atomic step in Redis. A token older than the
// hash's fence gets a STALE error and changes nothing.
const sellScript = `
local token = tonumber(ARGV[1])
local fence = tonumber(redis.call('HGET', KEYS[1], 'fence') or 0)
if token < fence then
  return redis.error_reply('STALE fencing token')
end
local qty = tonumber(redis.call('HGET', KEYS[1], 'qty') or 0)
local take = tonumber(ARGV[2])
if qty < take then
  return redis.error_reply('SOLDOUT')
end
redis.call('HSET', KEYS[1], 'qty', qty - take, 'fence', ARGV[1])
return qty - take
`

// Fencing a read-modify-write in Redis with one Lua script: the script
// checks and raises the fence and does the read and the write, atomically.
func ExampleFence_redisScript() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	a, b, err := pausedHolder(lk, "sku:8")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Release(context.Background())

	c := examplePool().Get()
	defer c.Close()
	const key = "shop:stock:{sku:8}"
	if _, err := c.Do("HSET", key, "qty", 5, "fence", 0); err != nil {
		fmt.Println(err)
		return
	}
	left, err := redis.Int64(c.Do("EVAL", sellScript, 1, key, b.Token(), 1))
	fmt.Println("B sells:", left, err)
	_, err = redis.Int64(c.Do("EVAL", sellScript, 1, key, a.Token(), 1)) // A resumes
	fmt.Println("A sells:", err)
	// Output:
	// B sells: 4 <nil>
	// A sells: STALE fencing token
}

// errStale is what sellWatch returns for a stale fencing token.
var errStale = errors.New("stale fencing token")

// sellWatch takes one unit from the stock hash key (fields qty and fence)
// for the holder of token, computing in Go: WATCH, read, compute, then
// MULTI/EXEC the write. EXEC fails if anyone wrote the hash after WATCH, and
// then it reads again: a compare-and-set on the value read. The fence check
// refuses a holder once a newer holder has written. If between is not nil,
// it runs once between the read and the write (a stand-in for the holder's
// own work).
func sellWatch(c redis.Conn, key string, token int64, between func()) (int64, error) {
	for {
		if _, err := c.Do("WATCH", key); err != nil {
			return 0, err
		}
		v, err := redis.Int64s(c.Do("HMGET", key, "qty", "fence"))
		if err != nil {
			return 0, err
		}
		qty, fence := v[0], v[1]
		if token < fence {
			_, _ = c.Do("UNWATCH")
			return 0, errStale
		}
		if between != nil {
			between()
			between = nil
		}
		if err := c.Send("MULTI"); err != nil {
			return 0, err
		}
		if err := c.Send("HSET", key, "qty", qty-1, "fence", token); err != nil {
			return 0, err
		}
		reply, err := c.Do("EXEC")
		if err != nil {
			return 0, err
		}
		if reply != nil {
			return qty - 1, nil
		}
		// nil: the hash changed since WATCH; read it again.
	}
}

// Fencing a read-modify-write in Redis with WATCH/MULTI/EXEC, when the new
// value is computed in Go. B holds the lock and reads qty 5; meanwhile A,
// paused past its lease, resumes and sells from the same qty 5. B's EXEC
// then fails and B reads again: both sales count.
func ExampleFence_redisWatch() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	a, b, err := pausedHolder(lk, "sku:9w")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Release(context.Background())

	ca, cb := examplePool().Get(), examplePool().Get()
	defer ca.Close()
	defer cb.Close()
	const key = "shop:stock:{sku:9w}"
	if _, err := cb.Do("HSET", key, "qty", 5, "fence", 0); err != nil {
		fmt.Println(err)
		return
	}
	left, err := sellWatch(cb, key, b.Token(), func() {
		left, err := sellWatch(ca, key, a.Token(), nil)
		fmt.Println("A sells:", left, err)
	})
	fmt.Println("B sells:", left, err)
	_, err = sellWatch(ca, key, a.Token(), nil) // A again, after B's write
	fmt.Println("A sells:", err)
	// Output:
	// A sells: 4 <nil>
	// B sells: 3 <nil>
	// A sells: stale fencing token
}
