package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// hotLoopResult is one run of the bare hot-key loop.
type hotLoopResult struct {
	rate      float64       // critical sections per second in the window
	hold      time.Duration // mean time inside
	handOver  time.Duration // p50: a Release's start → the next Obtain's return
	handMean  time.Duration // mean of the same
	completed int
}

// ceiling is rate ÷ 1/(hold + hand-over p50): how close first come, first
// served runs to back-to-back critical sections.
func (r hotLoopResult) ceiling() float64 { return r.rate * (r.hold + r.handOver).Seconds() }

// runHotLoop is the hot key without the load tool's instruments: c
// goroutines loop Obtain (one key, TTL 10 s, wait 1 min) → hold → Release →
// think on locktag's default Locker, as an application would, with no
// request counter, no RTT probe and no per-call records; only the hold and
// the hand-over are timed. Rounds alternate the contention levels.
func runHotLoop(cfg *config, rep *report) {
	md := &rep.md
	fmt.Fprintf(md, "### Hot key, bare loop (hold %s, think %s)\n\n", cfg.hold, cfg.think)
	md.WriteString("`locker.New(redigo.New(pool))`, `Obtain`/`Release` in a loop on one key; no counters or probes. Ceiling: CS/s × (hold mean + hand-over p50).\n\n")
	md.WriteString("| round | c | CS/s | hold mean | hand-over p50 | hand-over mean | × ceiling |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	for round := range max(cfg.rounds, 1) {
		for _, c := range cfg.cs {
			key := fmt.Sprintf("bench:%s:hotloop:%d:%d", cfg.runID, round, c)
			r, err := hotLoop(cfg, key, c)
			if err != nil {
				fmt.Fprintf(md, "| %d | %d | error: %v | | | | |\n", round+1, c, err)
				continue
			}
			logf("hotloop c=%d: %+v", c, r)
			fmt.Fprintf(md, "| %d | %d | %.0f | %s | %s | %s | %.3f |\n", round+1, c, r.rate, fmtD(r.hold), fmtD(r.handOver), fmtD(r.handMean), r.ceiling())
		}
	}
	md.WriteString("\n")
}

func hotLoop(cfg *config, key string, c int) (hotLoopResult, error) {
	addr := cfg.addrs[0]
	pool := &redis.Pool{MaxIdle: c + 8, IdleTimeout: time.Minute, Dial: func() (redis.Conn, error) {
		return redis.Dial("tcp", addr, redis.DialConnectTimeout(time.Second))
	}}
	defer pool.Close()
	lk, err := locker.New(redigo.New(pool))
	if err != nil {
		return hotLoopResult{}, err
	}
	defer lk.Close()
	ctx := context.Background()
	start := time.Now().Add(cfg.warm)
	end := start.Add(cfg.dur)
	var released atomic.Int64 // the last Release's start, UnixNano
	var mu sync.Mutex
	var handOvers []time.Duration
	var held time.Duration
	var firstErr error
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for time.Now().Before(end) {
				le, err := lk.Obtain(ctx, key, locker.Params{TTL: 10 * time.Second, Wait: time.Minute})
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				in := time.Now()
				time.Sleep(cfg.hold)
				out := time.Now()
				if rs := released.Load(); rs != 0 && in.After(start) && in.Before(end) {
					mu.Lock()
					handOvers = append(handOvers, in.Sub(time.Unix(0, rs)))
					held += out.Sub(in)
					mu.Unlock()
				}
				released.Store(out.UnixNano())
				_ = le.Release(ctx)
				time.Sleep(cfg.think)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return hotLoopResult{}, firstErr
	}
	if len(handOvers) == 0 {
		return hotLoopResult{}, fmt.Errorf("no critical section in the window")
	}
	var sum time.Duration
	for _, h := range handOvers {
		sum += h
	}
	n := len(handOvers)
	slices.Sort(handOvers)
	return hotLoopResult{
		rate:      float64(n) / cfg.dur.Seconds(),
		hold:      held / time.Duration(n),
		handOver:  handOvers[n/2],
		handMean:  sum / time.Duration(n),
		completed: n,
	}, nil
}
