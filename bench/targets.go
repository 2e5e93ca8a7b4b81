package main

import (
	"fmt"
	"runtime"
	"time"
)

func numCPU() int       { return runtime.NumCPU() }
func goVersion() string { return runtime.Version() }

// targets prints the project's load targets next to what this run measured.
func (rep *report) targets() {
	md := &rep.md
	lines := 0
	line := func(target, measured string, ok bool) {
		if lines++; lines == 1 {
			md.WriteString("### Targets, measured in this run\n\n| target | measured | met |\n|---|---|---|\n")
		}
		m := "yes"
		if !ok {
			m = "**no**"
		}
		fmt.Fprintf(md, "| %s | %s | %s |\n", target, measured, m)
	}
	for _, c := range rep.cfg.cs {
		lt, ok1 := rep.find("uncontended", "locktag", c)
		ref, ok2 := rep.find("uncontended", "set+del", c)
		if ok1 && ok2 && ref.st.rate > 0 {
			x := lt.vsRef(ref)
			measured := fmt.Sprintf("%.2f×", x)
			if lt.ratioMed > 0 {
				measured += fmt.Sprintf(" (rounds %.2f–%.2f)", lt.ratioMin, lt.ratioMax)
			}
			if lp, ok := rep.find("uncontended", "locktag-pooled", c); ok {
				// Pooled calls (redigo.WithPipelining(0)) are opt-in: shown beside, judged on the default.
				measured += fmt.Sprintf(" (pooled: %.2f×)", lp.vsRef(ref))
			}
			line(fmt.Sprintf("uncontended c=%d: ≥ 0.9× set+del pairs/s", c), measured, x >= 0.9)
		}
	}
	for _, c := range rep.cfg.cs {
		lt, ok := rep.find("hot", "locktag", c)
		if !ok {
			continue
		}
		if c >= 16 {
			best, bn := 0.0, ""
			for _, p := range peerNames {
				if r, ok := rep.find("hot", p, c); ok && r.st.rate > best {
					best, bn = r.st.rate, p
				}
			}
			if hr := lt.hotRounds; hr != nil {
				v, w := hr.vsBest, hr.p99Ideal
				line(fmt.Sprintf("hot c=%d: CS/s ≥ 1.5× best peer", c), fmt.Sprintf("%.2f× (median of rounds; range %.2f–%.2f)", v[0], v[1], v[2]), v[0] >= 1.5)
				line(fmt.Sprintf("hot c=%d: wait p99 ≤ 1.5× ideal FCFS", c), fmt.Sprintf("%.2f× (median of rounds; range %.2f–%.2f)", w[0], w[1], w[2]), w[0] <= 1.5)
			} else {
				if best > 0 {
					x := lt.st.rate / best
					line(fmt.Sprintf("hot c=%d: CS/s ≥ 1.5× best peer", c), fmt.Sprintf("%.2f× (%.0f vs %s %.0f)", x, lt.st.rate, bn, best), x >= 1.5)
				}
				id := lt.ideal()
				x := float64(lt.st.waitP99) / float64(id)
				line(fmt.Sprintf("hot c=%d: wait p99 ≤ 1.5× ideal FCFS", c), fmt.Sprintf("%.2f× (%s vs %s)", x, fmtD(lt.st.waitP99), fmtD(id)), x <= 1.5)
			}
		}
		x := float64(lt.st.gapP50) / float64(rep.rtt)
		line(fmt.Sprintf("hot c=%d: hand-over p50 ≤ 3 RTT", c), fmt.Sprintf("%.1f RTT (%s)", x, fmtD(lt.st.gapP50)), x <= 3)
		if c == 64 || c == rep.cfg.cs[len(rep.cfg.cs)-1] {
			line(fmt.Sprintf("hot c=%d: client requests per acquisition ≤ 3", c), fmt.Sprintf("%.2f (server commands %.1f)", lt.reqPerAcq, lt.cmdPerAcq), lt.reqPerAcq <= 3)
		}
	}
	if lt, ok := rep.find("procs", "locktag", rep.cfg.procs*rep.cfg.procWorkers); ok {
		best, bn := 0.0, ""
		for _, p := range peerNames {
			if r, ok := rep.find("procs", p, lt.c); ok && r.st.rate > best {
				best, bn = r.st.rate, p
			}
		}
		if best > 0 {
			x := lt.st.rate / best
			line("processes: CS/s ≥ 1.5× best peer", fmt.Sprintf("%.2f× (%.0f vs %s %.0f)", x, lt.st.rate, bn, best), x >= 1.5)
		}
		id := lt.ideal()
		x := float64(lt.worstWait99) / float64(id)
		line("processes: worst-process wait p99 ≤ 1.5× ideal FCFS", fmt.Sprintf("%.2f× (%s vs %s)", x, fmtD(lt.worstWait99), fmtD(id)), x <= 1.5)
	}
	for _, c := range append([]int{1}, rep.cfg.cs...) {
		rs, ok1 := rep.find("redlock-uncontended", "redsync-redlock5", c)
		lr, ok2 := rep.find("redlock-uncontended", "locktag-redlock5", c)
		if ok1 && ok2 && rs.st.rate > 0 {
			x := lr.st.rate / rs.st.rate
			line(fmt.Sprintf("Redlock 5 nodes c=%d: pairs/s ≥ 1.5× redsync's", c), fmt.Sprintf("%.2f× (%.0f vs %.0f)", x, lr.st.rate, rs.st.rate), x >= 1.5)
		}
		if c != 1 || !ok2 {
			continue
		}
		if one, ok := rep.find("redlock-uncontended", "locktag", 1); ok && one.st.pairP50 > 0 {
			x := float64(lr.st.pairP50) / float64(one.st.pairP50)
			line("Redlock 5 nodes c=1: p50 ≤ 2× locktag single-node p50", fmt.Sprintf("%.2f× (%s vs %s)", x, fmtD(lr.st.pairP50), fmtD(one.st.pairP50)), x <= 2)
		}
	}
	for _, c := range rep.cfg.cs {
		rs, ok1 := rep.find("redlock-hot", "redsync-redlock5", c)
		lr, ok2 := rep.find("redlock-hot", "locktag-redlock5", c)
		if ok1 && ok2 && rs.st.rate > 0 {
			line(fmt.Sprintf("Redlock 5 nodes hot c=%d: CS/s (orientation)", c), fmt.Sprintf("%.2f× redsync (%.0f vs %.0f)", lr.st.rate/rs.st.rate, lr.st.rate, rs.st.rate), true)
		}
	}
	for _, sc := range []string{"e2e", "e2e-grpc", "e2e-http", "e2e-connect"} {
		for _, c := range rep.cfg.cs {
			e2eTarget(rep, line, sc, c)
		}
	}
	if lines > 0 {
		md.WriteString("\n")
	}
	_ = time.Second
}

// e2eTarget writes the end-to-end target line of one transport at c.
func e2eTarget(rep *report, line func(target, measured string, ok bool), sc string, c int) {
	what := map[string]string{"e2e": "Gin", "e2e-grpc": "gRPC", "e2e-http": "net/http", "e2e-connect": "connect"}[sc]
	base, ok1 := rep.find(sc, "no tag", c)
	tag, ok2 := rep.find(sc, "lock tag", c)
	if !ok1 || !ok2 || base.st.pairP50 <= 0 {
		return
	}
	extra := tag.st.pairP50 - base.st.pairP50 - 2*rep.rtt
	x := float64(extra) / float64(base.st.pairP50)
	hand := ""
	if bh, ok := rep.find(sc, "by hand", c); ok {
		hand = fmt.Sprintf("; by-hand Obtain/Release p50 %s, so the adapter itself adds %s", fmtD(bh.st.pairP50), fmtSigned(tag.st.pairP50-bh.st.pairP50))
	}
	line(fmt.Sprintf("end to end %s c=%d: tag adds ≤ 10%% to p50 beyond 2 RTT", what, c),
		fmt.Sprintf("%+.1f%% (p50 %s vs no tag %s, 2 RTT = %s; allocs/req %.0f vs %.0f%s)", 100*x, fmtD(tag.st.pairP50), fmtD(base.st.pairP50), fmtD(2*rep.rtt), tag.allocs, base.allocs, hand), x <= 0.10)
}
