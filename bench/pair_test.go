package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
)

// pairLibs are BenchmarkPair's subjects: locktag on each of its drivers,
// and the peers on the same client libraries.
var pairLibs = []string{"locktag", "redsync", "locktag-goredis", "redislock", "locktag-rueidis", "rueidislock"}

// BenchmarkPair: an uncontended lock and unlock through the load tool's
// adapters (the clients and settings of the load tables), each goroutine
// on its own key, from 1, 16 and 64 goroutines. ns/op, allocs/op and
// req/op (client requests) are per pair; allocations include the
// goroutines' own, few. locker/goredis's BenchmarkPair reads the go-redis
// driver against plain scripts; this one sets every driver beside the
// others and the peers, rueidis included.
//
//	cd bench && go test -run '^$' -bench Pair -benchmem -count 5 .
func BenchmarkPair(b *testing.B) {
	srv := startBenchServer(b)
	for _, c := range []int{1, 16, 64} {
		for _, name := range pairLibs {
			s, ok := subjectByName(name)
			if !ok {
				b.Fatalf("no subject %q", name)
			}
			b.Run(fmt.Sprintf("c=%d/%s", c, name), func(b *testing.B) {
				var reqs atomic.Int64
				l, closeFn, err := s.open([]string{srv.addr}, c, &reqs)
				if err != nil {
					b.Fatal(err)
				}
				defer closeFn()
				ctx := context.Background()
				var n atomic.Int64
				b.ReportAllocs()
				b.ResetTimer()
				r0 := reqs.Load()
				var wg sync.WaitGroup
				for i := range c {
					wg.Go(func() {
						key := fmt.Sprintf("pair:%s:%d:%d", name, c, i)
						for n.Add(1) <= int64(b.N) {
							unlock, err := l.Lock(ctx, key)
							if err != nil {
								b.Error(err)
								return
							}
							if err := unlock(); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(reqs.Load()-r0)/float64(b.N), "req/op")
			})
		}
	}
}

// startBenchServer starts the tool's redis-server for b and stops it when
// b ends. Without redis-server the benchmark fails, unless
// LOCKTAG_SKIP_REDIS=1 (as in the library's tests), where it is skipped.
func startBenchServer(b *testing.B) *server {
	b.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil && os.Getenv("LOCKTAG_SKIP_REDIS") == "1" {
		b.Skip("redis-server not installed (LOCKTAG_SKIP_REDIS=1)")
	}
	s, err := startServer()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.stop)
	return s
}
