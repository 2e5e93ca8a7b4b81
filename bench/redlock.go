package main

import (
	"fmt"
	"time"
)

func runRedlock(cfg *config, rep *report) {
	md := &rep.md
	fmt.Fprintf(md, "### Redlock: 5 independent masters\n\n")
	md.WriteString("Uncontended p50/p99 are lock+unlock pairs; hot p50/p99 are waits. locktag single-node runs beside the two 5-node Redlocks for orientation (redlockSubjects in bench/adapters.go lists the contenders).\n\n")
	fmt.Fprintf(md, "| library | nodes | scenario | c | ops/s | p50 | p99 | hand-over p50 | fairness min/max | violations | client req/acq | server cmds/acq | server CPU/acq |\n|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	type cand struct {
		s     subject
		addrs []string
	}
	var cands []cand
	for _, s := range redlockSubjects() {
		if cfg.wantLib(s.name) {
			cands = append(cands, cand{s, cfg.redlock})
		}
	}
	if s, ok := subjectByName("locktag"); ok && cfg.wantLib("locktag") {
		cands = append(cands, cand{s, cfg.addrs})
	}
	ucs := append([]int{1}, cfg.cs...)
	for _, c := range ucs {
		for _, cd := range cands {
			logf("redlock uncontended %s c=%d", cd.s.name, c)
			r, err := measure(cd.s, cd.addrs, cfg.uncontendedLoad(c, "rl"+cd.s.name), false)
			if err != nil {
				fatalf("%v", err)
			}
			r.scenario = "redlock-uncontended"
			rep.rows = append(rep.rows, r)
			fmt.Fprintf(md, "| %s | %d | uncontended | %d | %.0f | %s | %s | – | – | %d | %.2f | %.2f | %s |\n",
				r.lib, len(cd.addrs), c, r.st.rate, fmtD(r.st.pairP50), fmtD(r.st.pairP99), r.st.violations, r.reqPerAcq, r.cmdPerAcq, fmtD(r.cpuPerAcq))
		}
	}
	for _, c := range cfg.cs {
		for _, cd := range cands {
			logf("redlock hot %s c=%d", cd.s.name, c)
			r, err := measure(cd.s, cd.addrs, cfg.hotLoad(c, "rl"+cd.s.name), true)
			if err != nil {
				fatalf("%v", err)
			}
			r.scenario = "redlock-hot"
			rep.rows = append(rep.rows, r)
			fmt.Fprintf(md, "| %s | %d | hot | %d | %.0f | %s | %s | %s | %d/%d | %d | %.2f | %.2f | %s |\n",
				r.lib, len(cd.addrs), c, r.st.rate, fmtD(r.st.waitP50), fmtD(r.st.waitP99), fmtD(r.st.gapP50), r.st.fairMin, r.st.fairMax, r.st.violations, r.reqPerAcq, r.cmdPerAcq, fmtD(r.cpuPerAcq))
		}
	}
	md.WriteString("\n")
}

// --- control ---

// runControl runs the SET+DEL reference, which excludes nothing, through the
// hot-key and many-processes detectors: both must report violations.
func runControl(cfg *config, rep *report) int {
	rep.cfg = cfg
	rep.rtt = pingRTT(cfg.addrs[0], 200*time.Millisecond)
	rep.header()
	s, _ := subjectByName("set+del")
	c := 16
	rep.md.WriteString("### Control: the overlap detectors against SET+DEL (not a lock)\n\n")
	fmt.Fprintf(&rep.md, "| scenario | c | CS/s | violations | detector |\n|---|---:|---:|---:|---|\n")
	logf("control hot set+del c=%d", c)
	r, err := measure(s, cfg.addrs, cfg.hotLoad(c, "control"), true)
	if err != nil {
		fatalf("%v", err)
	}
	code := 0
	verdict := func(v int64) string {
		if v > 0 {
			return "caught it"
		}
		code = 1
		return "**MISSED** (detector broken)"
	}
	fmt.Fprintf(&rep.md, "| hot key, one process | %d | %.0f | %d | %s |\n", c, r.st.rate, r.st.violations, verdict(r.st.violations))
	p := runProcs(cfg, s)
	fmt.Fprintf(&rep.md, "| hot key, %d processes × %d | %d | %.0f | %d | %s |\n", p.procs, cfg.procWorkers, p.c, p.st.rate, p.st.violations, verdict(p.st.violations))
	b := runBurstOne(cfg, burstLibOf(s), 300, burstStock(300), false)
	fmt.Fprintf(&rep.md, "| burst, %d processes, stock %d: oversold / overlaps | %d | – | %d / %d | %s |\n", min(cfg.burstProcs, b.buyers), b.stock, b.buyers, b.oversold, b.violations, verdict(int64(b.oversold)))
	rep.md.WriteString("\n")
	return code
}

// --- formatting ---
