package goredis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// BenchmarkReplicaAck: an uncontended lock+unlock through go-redis on a
// master with one replica, without and with WithReplicaAck(1, 1s),
// alternating in each iteration as locker's BenchmarkReplicaAck does:
// plain-µs, ack-µs per lock+unlock and their ratio ack/plain.
func BenchmarkReplicaAck(b *testing.B) {
	master := redistest.Start(b, redistest.WithArgs("--repl-diskless-sync-delay", "0"))
	host, port, _ := strings.Cut(master.Addr(), ":")
	redistest.Start(b, redistest.WithArgs("--replicaof", host, port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := redigo.String(master.Do("INFO", "replication"))
		if err == nil && strings.Contains(info, "state=online") {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("replica not online: %v", err)
		}
		time.Sleep(5 * time.Millisecond) // polling a server, not synchronising goroutines
	}
	rdb := plainClient(b, master)
	plainLk, ackLk := newLocker(b, rdb), newLocker(b, rdb, locker.WithReplicaAck(1, time.Second))
	ctx := context.Background()
	pair := func(lk *locker.Locker) time.Duration {
		start := time.Now()
		le, err := lk.Obtain(ctx, "ack", locker.Params{TTL: 10 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		if err := le.Release(ctx); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	b.Run("goredis", func(b *testing.B) {
		var plain, acked time.Duration
		for b.Loop() {
			plain += pair(plainLk)
			acked += pair(ackLk)
		}
		b.ReportMetric(float64(plain.Microseconds())/float64(b.N), "plain-µs")
		b.ReportMetric(float64(acked.Microseconds())/float64(b.N), "ack-µs")
		b.ReportMetric(float64(acked)/float64(plain), "ack/plain")
	})
}
