package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// waitersResult is what one round of queued waiters did: each waiter
// called Lock once, with the burst's wait, and held the lock for the
// burst's hold if it got it.
type waitersResult struct {
	served, starved, unavailable, overlaps int64
	took                                   time.Duration
	split                                  handOvers // one process only
}

// handOvers splits one process's cycle of a holder: its hold as measured
// (the sleep), its Release call, and the time from a Release's call to
// the next holder's return from Lock (the hand-over). Means and medians.
type handOvers struct {
	hold, release, handOver, handOverP50 time.Duration
}

// splitHandOvers computes handOvers from each served waiter's times: Lock
// returned (got), Release called (rel) and returned (done).
func splitHandOvers(got, rel, done []time.Time) handOvers {
	idx := make([]int, 0, len(got))
	for i, t := range got {
		if !t.IsZero() {
			idx = append(idx, i)
		}
	}
	if len(idx) < 2 {
		return handOvers{}
	}
	slices.SortFunc(idx, func(a, b int) int { return got[a].Compare(got[b]) })
	var hold, release, ho []time.Duration
	for k, i := range idx {
		hold = append(hold, rel[i].Sub(got[i]))
		release = append(release, done[i].Sub(rel[i]))
		if k+1 < len(idx) {
			ho = append(ho, got[idx[k+1]].Sub(rel[i]))
		}
	}
	mean := func(ds []time.Duration) time.Duration {
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		return sum / time.Duration(len(ds))
	}
	slices.Sort(release)
	slices.Sort(ho)
	return handOvers{hold: mean(hold), release: release[len(release)/2], handOver: mean(ho), handOverP50: ho[len(ho)/2]}
}

func (r *waitersResult) add(o waitersResult) {
	r.served += o.served
	r.starved += o.starved
	r.unavailable += o.unavailable
	r.overlaps += o.overlaps
	r.took = max(r.took, o.took)
}

// runWaiters is the first-come-first-served burst: N waiters arrive at
// once at one lock, each calls Lock once (wait -burst-wait) and holds it
// for -burst-hold; a waiter whose wait ends unserved is starved. At N
// waiters, serving them all inside the wait needs hold + hand-over below
// wait ÷ N. Run in one process, then spread over -procs processes.
func runWaiters(cfg *config, rep *report) {
	md := &rep.md
	fmt.Fprintf(md, "### Waiters: first come, first served (hold %s, wait %s)\n\n", cfg.burstHold, cfg.burstWait)
	md.WriteString("N waiters arrive at once at one lock; each calls Lock once and holds it for the hold if it got it. Starved: waits that ended unserved. Rate: served ÷ the run's time. Serving all N inside the wait needs N ÷ wait per second.\n\n")
	md.WriteString("| waiters | processes | served | starved | unavailable | overlaps (one process) | served/s | needed/s |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	type split struct {
		handOvers
		n int
	}
	var splits []split
	for _, n := range cfg.burstNs {
		for _, procs := range []int{1, cfg.burstProcs} {
			key := fmt.Sprintf("bench:%s:w:%d:%d", cfg.runID, n, procs)
			var r waitersResult
			if procs == 1 {
				r = waiters(cfg.addrs[0], key, n, cfg.burstHold, cfg.burstWait, time.Now())
				splits = append(splits, split{r.split, n})
			} else {
				r = waitersProcs(cfg, key, n, procs)
			}
			logf("waiters n=%d procs=%d: %+v", n, procs, r)
			fmt.Fprintf(md, "| %d | %d | %d | %d | %d | %d | %.0f | %.0f |\n", n, procs, r.served, r.starved, r.unavailable, r.overlaps,
				float64(r.served)/r.took.Seconds(), float64(n)/cfg.burstWait.Seconds())
		}
	}
	md.WriteString("\n")
	for _, h := range splits {
		fmt.Fprintf(md, "One process, %d waiters: hold (the sleep) %s on average; Release call %s (median); Release's call to the next holder's return from Lock %s on average, %s median.\n\n",
			h.n, h.hold.Round(10*time.Microsecond), h.release.Round(10*time.Microsecond), h.handOver.Round(10*time.Microsecond), h.handOverP50.Round(10*time.Microsecond))
	}
}

// waiters runs n waiters at key from at on, on a Locker with the example
// app's pool.
func waiters(addr, key string, n int, hold, wait time.Duration, at time.Time) waitersResult {
	var reqs atomic.Int64
	lk, err := locker.New(redigo.New(readmePool(addr, &reqs)))
	if err != nil {
		fatalf("waiters: %v", err)
	}
	defer lk.Close()
	time.Sleep(time.Until(at))
	var served, starved, unavailable, overlaps atomic.Int64
	var inside atomic.Int32
	var wg sync.WaitGroup
	// Each waiter's times, for the split of a hand-over (written by its
	// goroutine alone, read after wg.Wait).
	got, rel, done := make([]time.Time, n), make([]time.Time, n), make([]time.Time, n)
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			le, err := lk.Obtain(context.Background(), key, locker.Params{TTL: 10 * time.Second, Wait: wait})
			switch {
			case errors.Is(err, locker.ErrUnavailable):
				unavailable.Add(1)
				return
			case err != nil:
				starved.Add(1)
				return
			}
			got[i] = time.Now()
			if inside.Add(1) > 1 {
				overlaps.Add(1)
			}
			time.Sleep(hold)
			inside.Add(-1)
			rel[i] = time.Now()
			_ = le.Release(context.Background())
			done[i] = time.Now()
			served.Add(1)
		})
	}
	wg.Wait()
	took := time.Since(start)
	return waitersResult{served.Load(), starved.Load(), unavailable.Load(), overlaps.Load(), took, splitHandOvers(got, rel, done)}
}

// waitersProcs spreads n waiters over procs child processes that start
// together.
func waitersProcs(cfg *config, key string, n, procs int) waitersResult {
	exe, err := os.Executable()
	if err != nil {
		fatalf("waiters: %v", err)
	}
	at := time.Now().Add(2 * time.Second).UnixMilli()
	outs := make([]strings.Builder, procs)
	cmds := make([]*exec.Cmd, procs)
	for i := range procs {
		share := n / procs
		if i < n%procs {
			share++
		}
		cmds[i] = exec.Command(exe, "-waiters-child", cfg.addrs[0], key, strconv.Itoa(share),
			cfg.burstHold.String(), cfg.burstWait.String(), strconv.FormatInt(at, 10))
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], os.Stderr
		if err := cmds[i].Start(); err != nil {
			fatalf("waiters: %v", err)
		}
	}
	var total waitersResult
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			fatalf("waiters child: %v", err)
		}
		var r waitersResult
		var took int64
		if _, err := fmt.Sscan(outs[i].String(), &r.served, &r.starved, &r.unavailable, &r.overlaps, &took); err != nil {
			fatalf("waiters child output %q: %v", outs[i].String(), err)
		}
		r.took = time.Duration(took)
		total.add(r)
	}
	return total
}

// waitersChildMain is one child of waitersProcs: addr key n hold wait at.
func waitersChildMain(args []string) int {
	if len(args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: -waiters-child addr key n hold wait at-unix-ms")
		return 2
	}
	n, err1 := strconv.Atoi(args[2])
	hold, err2 := time.ParseDuration(args[3])
	wait, err3 := time.ParseDuration(args[4])
	at, err4 := strconv.ParseInt(args[5], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r := waiters(args[0], args[1], n, hold, wait, time.UnixMilli(at))
	fmt.Println(r.served, r.starved, r.unavailable, r.overlaps, int64(r.took))
	return 0
}
