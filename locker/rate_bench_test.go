package locker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// BenchmarkRateAllow: one rate decision (admitted, and refused), beside a
// SET + DEL (two round trips, not a limiter) and a PING in the same run;
// "interleaved" times the three back to back in every iteration.
func BenchmarkRateAllow(b *testing.B) {
	srv := redistest.Start(b)
	ctx := context.Background()
	// A rate no benchmark loop reaches: every decision is admitted.
	open := locker.RateParams{Limit: 1_000_000, Period: time.Second}
	// A rate used up: every decision is refused (a GET, no write).
	shut := locker.RateParams{Limit: 1, Period: time.Hour}
	allow := func(lk *locker.Locker, key string, p locker.RateParams, want error) func(b *testing.B) {
		return func(b *testing.B) {
			_, _ = lk.Allow(ctx, key, p)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := lk.Allow(ctx, key, p); !errors.Is(err, want) {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("ping", func(b *testing.B) {
		c := srv.Pool(b).Get()
		defer c.Close()
		for b.Loop() {
			if _, err := c.Do("PING"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("set-del-reference", func(b *testing.B) {
		pool := srv.Pool(b)
		b.ReportAllocs()
		for b.Loop() {
			c := pool.Get()
			_, err := c.Do("SET", "bench:setdel", "x", "PX", 10000)
			c.Close()
			if err != nil {
				b.Fatal(err)
			}
			c = pool.Get()
			_, err = c.Do("DEL", "bench:setdel")
			c.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	lk, pooled := newLocker(b, srv), newPipelined(b, srv, 0)
	b.Run("allow-admitted", allow(lk, "bench:open", open, nil))
	b.Run("allow-refused", allow(lk, "bench:shut", shut, locker.ErrRateLimited))
	b.Run("allow-admitted-pooled", allow(pooled, "bench:open2", open, nil))

	// interleaved: each iteration times one admitted decision, one SET +
	// DEL and one refused decision back to back, so a machine whose load
	// changes during the run weighs on all three alike; the ratios are
	// the figures to read.
	b.Run("interleaved", func(b *testing.B) {
		pool := srv.Pool(b)
		var admitted, setdel, refused time.Duration
		for b.Loop() {
			t0 := time.Now()
			if _, err := lk.Allow(ctx, "bench:open", open); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			c := pool.Get()
			_, err1 := c.Do("SET", "bench:setdel", "x", "PX", 10000)
			c.Close()
			c = pool.Get()
			_, err2 := c.Do("DEL", "bench:setdel")
			c.Close()
			if err := errors.Join(err1, err2); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			if _, err := lk.Allow(ctx, "bench:shut", shut); !errors.Is(err, locker.ErrRateLimited) {
				b.Fatal(err)
			}
			t3 := time.Now()
			admitted, setdel, refused = admitted+t1.Sub(t0), setdel+t2.Sub(t1), refused+t3.Sub(t2)
		}
		n := float64(b.N)
		b.ReportMetric(float64(admitted.Microseconds())/n, "admitted-µs")
		b.ReportMetric(float64(setdel.Microseconds())/n, "setdel-µs")
		b.ReportMetric(float64(refused.Microseconds())/n, "refused-µs")
		b.ReportMetric(float64(setdel)/float64(admitted), "setdel÷admitted")
		b.ReportMetric(float64(setdel)/float64(refused), "setdel÷refused")
	})
}
