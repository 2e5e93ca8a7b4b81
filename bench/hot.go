package main

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

func runHot(cfg *config, rep *report) {
	md := &rep.md
	rounds := max(cfg.rounds, 1)
	fmt.Fprintf(md, "### Hot key: all workers on one key (hold %s, think %s)\n\n", cfg.hold, cfg.think)
	md.WriteString("Wait is Lock's call to return; the ideal is first come, first served with the run's own hold and hand-over: (c−1)·(hold + hand-over p50). Hand-over is release → the next (already waiting) holder's Lock returns. Fairness is the fewest / most critical sections of one worker.\n\n")
	if rounds > 1 {
		fmt.Fprintf(md, "%d interleaved rounds per contention level; each library's row is its round with the median CS/s, and the targets use the median over rounds of each round's own ratios.\n\n", rounds)
	}
	md.WriteString(hotHeader)
	var drivers, peers []string
	for _, c := range cfg.cs {
		var libs []subject
		for _, s := range subjects() {
			if s.isLock && cfg.wantLib(s.name) {
				libs = append(libs, s)
			}
		}
		byRound := measureRounds(cfg, "hot", libs, c, rounds, cfg.hotLoad, true)
		drivers = append(drivers, driverRatios(byRound, libs, c, func(r row) float64 { return r.st.rate })...)
		peers = append(peers, samePeerRatios(byRound, c, func(r row) float64 { return r.st.rate })...)
		for _, s := range libs {
			r := medianBy(byRound, s.name, func(r row) float64 { return r.st.rate })
			if s.name == "locktag" && rounds > 1 {
				r.hotRounds = hotRoundRatios(byRound)
			}
			rep.rows = append(rep.rows, r)
			rep.hotLine(r)
		}
	}
	md.WriteString("\n")
	writeDriverRatios(md, "CS/s", drivers)
	writeSamePeerRatios(md, "CS/s", peers)
}

// hotRounds are locktag's per-round hot-key ratios, summarised.
type hotRounds struct {
	vsBest, p99Ideal [3]float64 // median, min, max
}

// hotRoundRatios computes, per round, locktag's CS/s over the best peer's
// and its wait p99 over its ideal, and returns their medians and ranges.
func hotRoundRatios(byRound []map[string]row) *hotRounds {
	var best, ideal []float64
	for _, m := range byRound {
		lt, ok := m["locktag"]
		if !ok {
			continue
		}
		top := 0.0
		for _, p := range peerNames {
			if r, ok := m[p]; ok {
				top = max(top, r.st.rate)
			}
		}
		if top > 0 {
			best = append(best, lt.st.rate/top)
		}
		if id := lt.ideal(); id > 0 {
			ideal = append(ideal, float64(lt.st.waitP99)/float64(id))
		}
	}
	return &hotRounds{vsBest: medRange(best), p99Ideal: medRange(ideal)}
}

func medRange(x []float64) [3]float64 {
	if len(x) == 0 {
		return [3]float64{}
	}
	slices.Sort(x)
	return [3]float64{x[len(x)/2], x[0], x[len(x)-1]}
}

// medianBy returns lib's row from the round with the median of key.
func medianBy(byRound []map[string]row, lib string, key func(row) float64) row {
	var all []row
	for _, m := range byRound {
		if r, ok := m[lib]; ok {
			all = append(all, r)
		}
	}
	slices.SortFunc(all, func(a, b row) int { return cmp.Compare(key(a), key(b)) })
	return all[len(all)/2]
}

// hotHeader heads the hot-key tables: a line per library and contention
// level (hotLine).
const hotHeader = "| library | c | CS/s | hold mean | wait p50 | wait p99 | ideal wait | p99 / ideal | hand-over p50 | in idle RTT | in loaded RTT | hand-over p99 | fairness min/max | fails | violations | client req/acq | server cmds/acq | server CPU/acq | client CPU/acq | client allocs/acq |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"

func (rep *report) hotLine(r row) {
	id := r.ideal()
	fmt.Fprintf(&rep.md, "| %s | %d | %.0f | %s | %s | %s | %s | %s | %s | %.1f | %.1f | %s | %d/%d | %d | %d | %.2f | %.2f | %s | %s | %.1f |\n",
		r.lib, r.c, r.st.rate, fmtD(r.st.holdMean), fmtD(r.st.waitP50), fmtD(r.st.waitP99), fmtD(id), ratio(float64(r.st.waitP99), float64(id)),
		fmtD(r.st.gapP50), float64(r.st.gapP50)/float64(rep.rtt), float64(r.st.gapP50)/float64(max(r.loadedRTT, 1)), fmtD(r.st.gapP99),
		r.st.fairMin, r.st.fairMax, r.st.fails, r.st.violations, r.reqPerAcq, r.cmdPerAcq, fmtD(r.cpuPerAcq), fmtD(r.cliPerAcq), r.allocs)
}

// --- many processes ---

// childResult is what a child process hands back through its output file.
type childResult struct {
	Recs []rec
	Reqs int64
	Live int64
	CPU  time.Duration // the child's CPU in the window
}
