package redigo_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/redigo"
)

// deadlineCtx has a deadline and no Done channel, as the locker's call
// contexts do: the driver turns the deadline into its own waits.
type deadlineCtx struct {
	context.Context
	dl time.Time
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.dl, true }
func (c *deadlineCtx) Done() <-chan struct{}       { return nil }
func (c *deadlineCtx) Err() error                  { return nil }

// cpuTime is this process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEval: one trivial script call through the pipelined driver, the
// pooled driver and a plain redigo Do of EVALSHA on a pooled connection
// (the floor), from 1 and 16 goroutines, each call with a 2s deadline; cpu-ns/op is
// this process's CPU time (user and system) per call.
func BenchmarkEval(b *testing.B) {
	srv := redistest.Start(b)
	script := driver.NewScript("return 1")
	if _, err := srv.Do("SCRIPT", "LOAD", script.Source()); err != nil {
		b.Fatal(err)
	}
	newPool := func() *redis.Pool {
		return &redis.Pool{
			MaxIdle: 32,
			DialContext: func(ctx context.Context) (redis.Conn, error) {
				return redis.DialContext(ctx, "tcp", srv.Addr(),
					redis.DialReadTimeout(10*time.Second), redis.DialWriteTimeout(10*time.Second))
			},
		}
	}
	drivers := []struct {
		name string
		eval func(b *testing.B, pool *redis.Pool) func(ctx context.Context) error
	}{
		{"redigo-Do", func(b *testing.B, pool *redis.Pool) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				c := pool.Get()
				defer c.Close()
				dl, _ := ctx.Deadline()
				_, err := redis.DoWithTimeout(c, time.Until(dl), "EVALSHA", script.HashArg(), 0)
				return err
			}
		}},
		{"pooled", func(b *testing.B, pool *redis.Pool) func(ctx context.Context) error {
			d := redigo.New(pool, redigo.WithPipelining(0))
			return func(ctx context.Context) error { _, err := d.Eval(ctx, script, driver.Keys{}); return err }
		}},
		{"pipelined", func(b *testing.B, pool *redis.Pool) func(ctx context.Context) error {
			d := redigo.New(pool)
			b.Cleanup(func() { _ = d.(interface{ Close() error }).Close() })
			return func(ctx context.Context) error { _, err := d.Eval(ctx, script, driver.Keys{}); return err }
		}},
	}
	for _, g := range []int{1, 16} {
		for _, dr := range drivers {
			b.Run(fmt.Sprintf("g=%d/%s", g, dr.name), func(b *testing.B) {
				pool := newPool()
				defer pool.Close()
				eval := dr.eval(b, pool)
				var n atomic.Int64
				var wg sync.WaitGroup
				b.ReportAllocs()
				cpu0 := cpuTime()
				b.ResetTimer()
				for range g {
					wg.Go(func() {
						ctx := &deadlineCtx{Context: context.Background()}
						for n.Add(1) <= int64(b.N) {
							ctx.dl = time.Now().Add(2 * time.Second)
							if err := eval(ctx); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}
