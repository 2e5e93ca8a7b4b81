package goredis_test

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/goredis"
)

// The scripts of a plain lock (a SET NX PX, a compare-and-delete), as
// go-redis users write one: the pair the driver's own speed is read in.
const (
	plainTake    = `return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])`
	plainRelease = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`
)

// BenchmarkPair: an uncontended lock and unlock, each goroutine on its own
// key, from 1, 16 and 64 goroutines, on one go-redis client (as
// docs/scale-out.md recommends):
//
//   - locktag: Obtain + Release through this driver;
//   - driver: the plain lock's two scripts through this driver's Eval;
//   - go-redis: the same two scripts through go-redis's Script.Run, one
//     pooled connection per call (what go-redis lock libraries do);
//   - set-del: a SET and a DEL (not a lock: the two-round-trip floor).
//
// driver ÷ go-redis is the driver's own speed; locktag ÷ driver what the
// locker's work and scripts add. ns/op and allocs/op are per pair (with
// c > 1 the allocations include the goroutines' own, few).
//
//	go test -run '^$' -bench Pair -benchmem -count 5 ./locker/goredis/
func BenchmarkPair(b *testing.B) {
	srv := redistest.Start(b)
	rdb := plainClient(b, srv)
	lk := newLocker(b, rdb)
	d := goredis.New(rdb)
	if c, ok := d.(io.Closer); ok {
		b.Cleanup(func() { _ = c.Close() })
	}
	p := locker.Params{TTL: 10 * time.Second, Wait: time.Minute}
	take, release := driver.NewScript(plainTake), driver.NewScript(plainRelease)
	gTake, gRelease := redis.NewScript(plainTake), redis.NewScript(plainRelease)
	type pairFunc func(ctx context.Context, key string, keys driver.Keys, token string) error
	subjects := []struct {
		name string
		pair pairFunc
	}{
		{"locktag", func(ctx context.Context, key string, _ driver.Keys, _ string) error {
			le, err := lk.Obtain(ctx, key, p)
			if err != nil {
				return err
			}
			return le.Release(ctx)
		}},
		{"driver", func(ctx context.Context, _ string, keys driver.Keys, token string) error {
			if _, err := d.Eval(ctx, take, keys, token, 10000); err != nil {
				return err
			}
			_, err := d.Eval(ctx, release, keys, token)
			return err
		}},
		{"go-redis", func(ctx context.Context, key string, _ driver.Keys, token string) error {
			keys := []string{key}
			if err := gTake.Run(ctx, rdb, keys, token, 10000).Err(); err != nil {
				return err
			}
			return gRelease.Run(ctx, rdb, keys, token).Err()
		}},
		{"set-del", func(ctx context.Context, key string, _ driver.Keys, _ string) error {
			if err := rdb.Set(ctx, key, "x", 10*time.Second).Err(); err != nil {
				return err
			}
			return rdb.Del(ctx, key).Err()
		}},
	}
	for _, c := range []int{1, 16, 64} {
		for _, s := range subjects {
			b.Run(fmt.Sprintf("c=%d/%s", c, s.name), func(b *testing.B) {
				b.ReportAllocs()
				var n atomic.Int64
				var wg sync.WaitGroup
				for i := range c {
					wg.Go(func() {
						// Each call under a deadline, as the locker's are.
						ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
						defer cancel()
						key := "pair:" + s.name + ":" + strconv.Itoa(i)
						keys := driver.NewKeys(key)
						token := "token:" + strconv.Itoa(i)
						for n.Add(1) <= int64(b.N) {
							if err := s.pair(ctx, key, keys, token); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
			})
		}
	}
}
