package locker_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// BenchmarkReplicaAck: the cost of WithReplicaAck(1, 1s) on a master with
// one replica. Each iteration locks and unlocks a key once without the
// option and once with it, alternately, so both see the same machine
// load (on the shared CI machine back-to-back sub-benchmarks drifted by
// 2x); ns/op is per pair of pairs, and the metrics split it: plain-µs and
// ack-µs per lock+unlock, ack/plain their ratio. One goroutine, and 16
// (parallel: each goroutine alternates on a key of its own), through the
// pipelined (default) and the pooled redigo driver.
func BenchmarkReplicaAck(b *testing.B) {
	master, _ := startReplicated(b)
	pool := master.Pool(b)
	ack := locker.WithReplicaAck(1, time.Second)
	for _, s := range []struct {
		name  string
		plain *locker.Locker
		acked *locker.Locker
	}{
		{"pipelined", newLockerOn(b, redigo.New(pool)), newLockerOn(b, redigo.New(pool), ack)},
		{"pooled", newLockerOn(b, redigo.New(pool, redigo.WithPipelining(0))), newLockerOn(b, redigo.New(pool, redigo.WithPipelining(0)), ack)},
	} {
		b.Run(s.name, func(b *testing.B) {
			var plain, acked time.Duration
			for b.Loop() {
				plain += lockPair(b, s.plain, "ack")
				acked += lockPair(b, s.acked, "ack")
			}
			reportAck(b, plain, acked, b.N)
		})
		b.Run(s.name+"-parallel", func(b *testing.B) {
			var plain, acked atomic.Int64
			var n, pairs atomic.Int64
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				key := "ackp" + strconv.FormatInt(n.Add(1), 10)
				for pb.Next() {
					plain.Add(int64(lockPair(b, s.plain, key)))
					acked.Add(int64(lockPair(b, s.acked, key)))
					pairs.Add(1)
				}
			})
			reportAck(b, time.Duration(plain.Load()), time.Duration(acked.Load()), int(pairs.Load()))
		})
	}
}

// lockPair locks and unlocks key on lk and returns how long it took.
func lockPair(b *testing.B, lk *locker.Locker, key string) time.Duration {
	ctx := context.Background()
	start := time.Now()
	le, err := lk.Obtain(ctx, key, locker.Params{TTL: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	if err := le.Release(ctx); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// reportAck reports the split of n alternating pairs.
func reportAck(b *testing.B, plain, acked time.Duration, n int) {
	if n == 0 || plain == 0 {
		return
	}
	b.ReportMetric(float64(plain.Microseconds())/float64(n), "plain-µs")
	b.ReportMetric(float64(acked.Microseconds())/float64(n), "ack-µs")
	b.ReportMetric(float64(acked)/float64(plain), "ack/plain")
}
