package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// --- uncontended cost of each kind ---

func runKindsUncontended(cfg *config, md *strings.Builder) []kindTarget {
	rounds := max(cfg.rounds, 1)
	subs := kindSubjects()
	fmt.Fprintf(md, "#### Uncontended: each worker takes and releases a lock of its own, by kind\n\n")
	md.WriteString("Every kind through `Obtain` + `Release` on the same server, interleaved per round. Cost × mutex is the mutex's pairs/s over the kind's in the same round (above 1: dearer), the median of the rounds (range in brackets).\n\n")
	md.WriteString("| kind | c | pairs/s | cost × mutex | p50 | p99 | client req/acq | server cmds/acq | server CPU/acq |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var tg []kindTarget
	for _, c := range cfg.cs {
		byRound := measureRounds(cfg, "kinds-uncontended", subs, c, rounds, cfg.uncontendedLoad, false)
		for _, s := range subs {
			var costs []float64
			for _, m := range byRound {
				if r := m[s.name]; r.st.rate > 0 {
					costs = append(costs, m["mutex"].st.rate/r.st.rate)
				}
			}
			x := medRange(costs)
			r := medianBy(byRound, s.name, func(r row) float64 { return r.st.rate })
			cost := fmt.Sprintf("%.2f×", x[0])
			if rounds > 1 {
				cost += fmt.Sprintf(" (%.2f–%.2f)", x[1], x[2])
			}
			fmt.Fprintf(md, "| %s | %d | %.0f | %s | %s | %s | %.2f | %.2f | %s |\n", s.name, c, r.st.rate, cost,
				fmtD(r.st.pairP50), fmtD(r.st.pairP99), r.reqPerAcq, r.cmdPerAcq, fmtD(r.cpuPerAcq))
			if strings.HasPrefix(s.name, "semaphore") {
				tg = append(tg, kindTarget{fmt.Sprintf("uncontended c=%d: semaphore acquire+release ≤ 1.2× the mutex's cost", c), cost, x[0] <= 1.2, false})
			}
		}
	}
	md.WriteString("\n")
	return tg
}

// --- a contended semaphore ---

// semCounted is a semaphore Lock for the contended run: every worker asks
// for the same Redis key, but the tool's one-holder overlap detector is
// given a key per worker (key#w), since up to semLimit holders are the
// point; the wrapper counts holders itself and records the peak, which
// must not pass the limit.
type semCounted struct {
	inner    Lock
	in, peak atomic.Int32
}

func (s *semCounted) Lock(ctx context.Context, key string) (func() error, error) {
	k, _, _ := strings.Cut(key, "#")
	unlock, err := s.inner.Lock(ctx, k)
	if err != nil {
		return nil, err
	}
	n := s.in.Add(1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	return func() error {
		s.in.Add(-1)
		return unlock()
	}, nil
}

func runSemContended(cfg *config, md *strings.Builder) []kindTarget {
	rounds := max(cfg.rounds, 1)
	fmt.Fprintf(md, "#### Contended semaphore: all workers on one key with limit %d (hold %s, think %s)\n\n", semLimit, cfg.hold, cfg.think)
	md.WriteString("Client requests are every command the Locker's connections send (scripts, SUBSCRIBE/UNSUBSCRIBE), counted in the driver; server commands are from INFO commandstats. Peak holders is the most workers inside at once, which must not pass the limit. The row is the round with the median client requests per acquisition.\n\n")
	md.WriteString("| c | acq/s | wait p50 | wait p99 | peak holders | fails | client req/acq | server cmds/acq | server CPU/acq |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var tg []kindTarget
	sem := kindSubjects()[1]
	for _, c := range cfg.cs {
		if c <= semLimit {
			continue // never contended
		}
		var rows []row
		var peaks []int32
		for i := range rounds {
			logf("kinds semaphore contended c=%d round %d/%d", c, i+1, rounds)
			var sc *semCounted
			s := sem
			s.open = func(addrs []string, c int, reqs *atomic.Int64) (Lock, func(), error) {
				l, closeFn, err := sem.open(addrs, c, reqs)
				sc = &semCounted{inner: l}
				return sc, closeFn, err
			}
			key := fmt.Sprintf("bench:%s:k:sem:%d:%d", cfg.runID, c, i)
			ld := load{c: c, warm: cfg.warm, dur: cfg.dur, grace: 3 * time.Second, hold: cfg.hold, think: cfg.think,
				key: func(w int) string { return fmt.Sprintf("%s#%d", key, w) }}
			r, err := measure(s, cfg.addrs, ld, false)
			if err != nil {
				fatalf("kinds: %v", err)
			}
			rows = append(rows, r)
			peaks = append(peaks, sc.peak.Load())
		}
		idx := make([]int, len(rows))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(rows[a].reqPerAcq, rows[b].reqPerAcq) })
		mid := idx[len(idx)/2]
		r, peak := rows[mid], slices.Max(peaks)
		fmt.Fprintf(md, "| %d | %.0f | %s | %s | %d | %d | %.2f | %.2f | %s |\n", c, r.st.rate, fmtD(r.st.waitP50), fmtD(r.st.waitP99),
			peak, r.st.fails, r.reqPerAcq, r.cmdPerAcq, fmtD(r.cpuPerAcq))
		tg = append(tg, kindTarget{fmt.Sprintf("semaphore contended c=%d: client requests per acquisition ≤ 3", c),
			fmt.Sprintf("%.2f (server commands %.2f; peak holders %d of %d)", r.reqPerAcq, r.cmdPerAcq, peak, semLimit), r.reqPerAcq <= 3 && peak <= semLimit, false})
	}
	md.WriteString("\n")
	return tg
}
