package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

func childMain(args []string) int {
	fs := newChildFlags()
	if err := fs.fs.Parse(args); err != nil {
		return 2
	}
	s, ok := subjectByName(*fs.lib)
	if !ok {
		fmt.Fprintf(os.Stderr, "child: unknown lib %q\n", *fs.lib)
		return 2
	}
	var reqs atomic.Int64
	l, closeFn, err := s.open(strings.Split(*fs.addrs, ","), *fs.c, &reqs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "child: %v\n", err)
		return 1
	}
	defer closeFn()
	key := *fs.key
	ld := load{c: *fs.c, warm: *fs.warm, dur: *fs.dur, grace: 3 * time.Second, hold: *fs.hold, think: *fs.think,
		workerBase: int32(*fs.base), key: func(int) string { return key }}
	var r0, r1 int64
	var u0, u1 time.Duration
	recs, _, live := drive(l, ld, *fs.t0, func(start bool) {
		if start {
			r0, u0 = reqs.Load(), selfCPU()
		} else {
			r1, u1 = reqs.Load(), selfCPU()
		}
	})
	b, _ := json.Marshal(childResult{Recs: recs, Reqs: r1 - r0, Live: live, CPU: u1 - u0})
	if err := os.WriteFile(*fs.out, b, 0o600); err != nil {
		fmt.Fprintf(os.Stderr, "child: %v\n", err)
		return 1
	}
	return 0
}

func runProcsAll(cfg *config, rep *report) {
	md := &rep.md
	fmt.Fprintf(md, "### Many processes: %d OS processes × %d workers on one key (hold %s, think %s)\n\n", cfg.procs, cfg.procWorkers, cfg.hold, cfg.think)
	md.WriteString("Every child records its critical sections on CLOCK_MONOTONIC; the parent merges them and counts overlaps (violations). Worst wait p99 is the largest of the per-process wait p99s; the ideal uses all workers: (N−1)·(hold + hand-over p50).\n\n")
	fmt.Fprintf(md, "| library | processes × workers | CS/s | hold mean | hand-over p50 | in idle RTT | in loaded RTT | hand-over p99 | wait p50 (all) | wait p99 (all) | worst-process wait p99 | ideal wait | worst / ideal | per-process CS min/max | fails | violations | client req/acq | server cmds/acq | server CPU/acq | client CPU/acq |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range subjects() {
		if !s.isLock || !cfg.wantLib(s.name) {
			continue
		}
		r := runProcs(cfg, s)
		rep.rows = append(rep.rows, r)
		rep.procsLine(r)
	}
	md.WriteString("\n")
}

func (rep *report) procsLine(r row) {
	id := r.ideal()
	fmt.Fprintf(&rep.md, "| %s | %d × %d | %.0f | %s | %s | %.1f | %.1f | %s | %s | %s | %s | %s | %s | %d/%d | %d | %d | %.2f | %.2f | %s | %s |\n",
		r.lib, r.procs, r.c/max(r.procs, 1), r.st.rate, fmtD(r.st.holdMean), fmtD(r.st.gapP50), float64(r.st.gapP50)/float64(rep.rtt),
		float64(r.st.gapP50)/float64(max(r.loadedRTT, 1)), fmtD(r.st.gapP99), fmtD(r.st.waitP50), fmtD(r.st.waitP99), fmtD(r.worstWait99), fmtD(id), ratio(float64(r.worstWait99), float64(id)),
		r.procMin, r.procMax, r.st.fails, r.st.violations, r.reqPerAcq, r.cmdPerAcq, fmtD(r.cpuPerAcq), fmtD(r.cliPerAcq))
}

func runProcs(cfg *config, s subject) row {
	logf("procs %s %d×%d", s.name, cfg.procs, cfg.procWorkers)
	addrs := cfg.addrs
	key := fmt.Sprintf("bench:%s:p:%s", cfg.runID, s.name)
	t0 := mono() + int64(700*time.Millisecond)
	cs := startChildren("-child", cfg.procs, func(p int) []string {
		return []string{"-lib", s.name, "-addrs", strings.Join(addrs, ","), "-key", key,
			"-c", strconv.Itoa(cfg.procWorkers), "-t0", strconv.FormatInt(t0, 10),
			"-warm", cfg.warm.String(), "-dur", cfg.dur.String(),
			"-hold", cfg.hold.String(), "-think", cfg.think.String(),
			"-base", strconv.Itoa(p * 1000)}
	})
	defer cs.remove()
	w := window{start: t0 + int64(cfg.warm), end: t0 + int64(cfg.warm+cfg.dur)}
	time.Sleep(time.Duration(w.start - mono()))
	c0 := serverStatsAll(addrs)
	pg := startPinger(addrs[0])
	time.Sleep(time.Duration(w.end - mono()))
	pg.stop()
	c1 := serverStatsAll(addrs)
	for _, cmd := range cs.cmds {
		if err := cmd.Wait(); err != nil {
			fatalf("child of %s: %v", s.name, err)
		}
	}
	var all []rec
	var reqs, live int64
	var cpu time.Duration
	var ids []int32
	r := row{scenario: "procs", lib: s.name, c: cfg.procs * cfg.procWorkers, procs: cfg.procs, procMin: -1, loadedRTT: pg.p50()}
	for p := range cfg.procs {
		var cr childResult
		if err := cs.read(p, &cr); err != nil {
			fatalf("child output: %v", err)
		}
		all = append(all, cr.Recs...)
		reqs += cr.Reqs
		live += cr.Live
		cpu += cr.CPU
		var pids []int32
		for i := range cfg.procWorkers {
			pids = append(pids, int32(p*1000+i))
		}
		ids = append(ids, pids...)
		ps := analyse(cr.Recs, w, pids, false)
		r.worstWait99 = max(r.worstWait99, ps.waitP99)
		if r.procMin < 0 || ps.acq < r.procMin {
			r.procMin = ps.acq
		}
		r.procMax = max(r.procMax, ps.acq)
	}
	r.st = analyse(all, w, ids, true)
	r.st.violations = max(r.st.violations, live)
	if r.st.acq > 0 {
		r.reqPerAcq = float64(reqs) / float64(r.st.acq)
		r.setServer(c1.sub(c0), len(addrs), pg.count())
		r.cliPerAcq = cpu / time.Duration(r.st.acq)
	}
	return r
}
