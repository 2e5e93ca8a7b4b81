package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"
)

// row is one run: a library at one contention level in one scenario.
type row struct {
	scenario  string
	lib       string
	c         int
	st        stats
	reqPerAcq float64       // client requests per acquired lock
	cmdPerAcq float64       // server commands (INFO commandstats) per acquired lock
	cpuPerAcq time.Duration // redis-server CPU (INFO cpu) per acquired lock
	cliPerAcq time.Duration // this process's CPU (getrusage) per acquired lock, tool overhead included
	// many processes
	procs       int
	worstWait99 time.Duration
	procMin     int
	procMax     int
	// PING p50 on a separate connection during the window (hot, procs)
	loadedRTT time.Duration
	// end to end
	allocs float64
	note   string
	// uncontended with -rounds > 1: the median and range of the per-round
	// ratios of pairs/s to the same round's set+del
	ratioMed, ratioMin, ratioMax float64
	// hot key with -rounds > 1 (locktag only)
	hotRounds *hotRounds
	// the whole machine during the measurement window
	mach machineState
}

// vsRef is r's pairs/s over the reference's: the median paired ratio when
// the run had interleaved rounds, else the plain quotient.
func (r row) vsRef(ref row) float64 {
	if r.ratioMed > 0 {
		return r.ratioMed
	}
	if ref.st.rate == 0 {
		return 0
	}
	return r.st.rate / ref.st.rate
}

// ideal is the first-come-first-served wait bound (c-1)·(hold+hand-over),
// with the run's own mean hold and hand-over p50.
func (r row) ideal() time.Duration { return fcfsBound(r.c-1, r.st) }

// fcfsBound is the wait of a caller with ahead callers before it in a
// first-come-first-served queue: ahead·(hold + hand-over), with st's mean
// hold and hand-over p50.
func fcfsBound(ahead int, st stats) time.Duration {
	return time.Duration(max(ahead, 0)) * (st.holdMean + st.gapP50)
}

type report struct {
	rtt  time.Duration // PING p50 on one connection, measured in this run
	cfg  *config
	rows []row
	md   strings.Builder
}

func (rep *report) find(scenario, lib string, c int) (row, bool) {
	for _, r := range rep.rows {
		if r.scenario == scenario && r.lib == lib && r.c == c {
			return r, true
		}
	}
	return row{}, false
}

func (rep *report) String() string { return rep.md.String() }

// measure runs one load against a fresh client of s.
func measure(s subject, addrs []string, ld load, oneKey bool) (row, error) {
	var reqs atomic.Int64
	l, closeFn, err := s.open(addrs, ld.c, &reqs)
	if err != nil {
		return row{}, err
	}
	defer closeFn()
	var r0, r1 int64
	var c0, c1 serverStat
	var u0, u1 time.Duration
	var pg *pinger
	var m0, m1 cpuTicks
	var m0ok, m1ok bool
	recs, w, live := drive(l, ld, mono(), func(start bool) {
		if start {
			m0, m0ok = readCPU()
			r0, c0, u0 = reqs.Load(), serverStatsAll(addrs), selfCPU()
			if oneKey {
				pg = startPinger(addrs[0])
			}
		} else {
			pg.stop()
			r1, c1, u1 = reqs.Load(), serverStatsAll(addrs), selfCPU()
			m1, m1ok = readCPU()
		}
	})
	ids := make([]int32, ld.c)
	for i := range ids {
		ids[i] = ld.workerBase + int32(i)
	}
	st := analyse(recs, w, ids, oneKey)
	st.violations = max(st.violations, live)
	r := row{lib: s.name, c: ld.c, st: st, loadedRTT: pg.p50(), mach: machineBetween(m0, m1, m0ok, m1ok)}
	if st.acq > 0 {
		r.reqPerAcq = float64(r1-r0) / float64(st.acq)
		r.setServer(c1.sub(c0), len(addrs), pg.count())
		r.cliPerAcq = (u1 - u0) / time.Duration(st.acq)
	}
	return r, nil
}

// pingRTT is the p50 of PING on one connection: the unit of "round trips".
func pingRTT(addr string, d time.Duration) time.Duration {
	c, err := redis.Dial("tcp", addr)
	if err != nil {
		fatalf("ping: %v", err)
	}
	defer c.Close()
	var lat []time.Duration
	for end := time.Now().Add(d); time.Now().Before(end); {
		t := time.Now()
		if _, err := c.Do("PING"); err != nil {
			fatalf("ping: %v", err)
		}
		lat = append(lat, time.Since(t))
	}
	return pct(lat[len(lat)/10:], 50)
}

func runAll(cfg *config, rep *report) {
	rep.cfg = cfg
	rep.rtt = pingRTT(cfg.addrs[0], 300*time.Millisecond)
	rep.header()
	if cfg.want("uncontended") {
		runUncontended(cfg, rep)
	}
	if cfg.want("hot") {
		runHot(cfg, rep)
	}
	if cfg.want("procs") {
		runProcsAll(cfg, rep)
	}
	if cfg.want("redlock") {
		runRedlock(cfg, rep)
	}
	if cfg.want("e2e") {
		runE2E(cfg, rep)
	}
	if cfg.want("kinds") {
		runKinds(cfg, rep) // bench/kinds.go
	}
	if cfg.scenarios["burst"] { // minutes long: only when named
		runBurst(cfg, rep)
	}
	if cfg.scenarios["burst-kinds"] { // only when named
		runBurstKinds(cfg, rep) // bench/burst_kinds.go
	}
	rtt2 := pingRTT(cfg.addrs[0], 300*time.Millisecond)
	fmt.Fprintf(&rep.md, "PING p50 at the end of the run: %s (start: %s).\n\n", fmtD(rtt2), fmtD(rep.rtt))
	rep.targets()
}

func (rep *report) header() {
	cfg := rep.cfg
	host, _ := os.Hostname()
	fmt.Fprintf(&rep.md, "## Load run %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&rep.md, "Host %s, %d CPUs, %s. Window %s after %s warm-up per run; hot key: hold %s, think %s. PING p50 (one round trip, RTT) = **%s**.\n\n",
		host, numCPU(), goVersion(), cfg.dur, cfg.warm, cfg.hold, cfg.think, fmtD(rep.rtt))
}

func (cfg *config) uncontendedLoad(c int, tag string) load {
	return load{c: c, warm: cfg.warm, dur: cfg.dur, grace: 2 * time.Second,
		key: func(w int) string { return fmt.Sprintf("bench:%s:u:%s:%d:%d", cfg.runID, tag, c, w) }}
}

func (cfg *config) hotLoad(c int, tag string) load {
	key := fmt.Sprintf("bench:%s:h:%s:%d", cfg.runID, tag, c)
	return load{c: c, warm: cfg.warm, dur: cfg.dur, grace: 3 * time.Second, hold: cfg.hold, think: cfg.think,
		key: func(int) string { return key }}
}

func runUncontended(cfg *config, rep *report) {
	md := &rep.md
	rounds := max(cfg.rounds, 1)
	fmt.Fprintf(md, "### Uncontended: each worker locks and unlocks its own key\n\n")
	if rounds > 1 {
		fmt.Fprintf(md, "%d interleaved rounds per contention level: every library once per round, one after another, so each ratio is paired with a set+del cell measured seconds away, and a burst of outside load spoils one round rather than one library's whole result. × set+del is the median of the per-round ratios (range in brackets); the other columns are from the round whose ratio is that median.\n\n", rounds)
	}
	md.WriteString("The last column is the whole machine during that row's window: CPUs busy (every process, this tool and redis-server included) / stolen by the hypervisor / one-minute load average. Below each contention level, the range over all its windows. A ratio taken while other work keeps the CPUs busy, or while steal is high, says more about the machine than about the libraries.\n\n")
	fmt.Fprintf(md, "| library | c | pairs/s | × set+del | p50 | p99 | client req/acq | server cmds/acq | server CPU/acq | client CPU/acq | busy / steal / load |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var machines []string
	for _, c := range cfg.cs {
		var libs []subject
		for _, s := range subjects() {
			if cfg.wantLib(s.name) || s.name == "set+del" {
				libs = append(libs, s)
			}
		}
		byRound := measureRounds(cfg, "uncontended", libs, c, rounds, cfg.uncontendedLoad, false)
		for _, s := range libs {
			rep.rows = append(rep.rows, pairedMedian(byRound, s.name, rounds > 1))
		}
		ref, _ := rep.find("uncontended", "set+del", c)
		for _, s := range libs {
			r, _ := rep.find("uncontended", s.name, c)
			x := fmt.Sprintf("%.2f×", r.vsRef(ref))
			if r.ratioMed > 0 {
				x += fmt.Sprintf(" (%.2f–%.2f)", r.ratioMin, r.ratioMax)
			}
			fmt.Fprintf(md, "| %s | %d | %.0f | %s | %s | %s | %.2f | %.2f | %s | %s | %s |\n", r.lib, c, r.st.rate, x,
				fmtD(r.st.pairP50), fmtD(r.st.pairP99), r.reqPerAcq, r.cmdPerAcq, fmtD(r.cpuPerAcq), fmtD(r.cliPerAcq), r.mach)
		}
		machines = append(machines, fmt.Sprintf("- c = %d: %s\n", c, machineRange(byRound)))
	}
	md.WriteString("\nThe machine during each contention level's windows:\n\n")
	for _, m := range machines {
		md.WriteString(m)
	}
	md.WriteString("\n")
}

// measureRounds measures every library once per round, one after another,
// and returns each round's rows by library.
func measureRounds(cfg *config, scenario string, libs []subject, c, rounds int, load func(c int, tag string) load, oneKey bool) []map[string]row {
	byRound := make([]map[string]row, rounds)
	for i := range rounds {
		byRound[i] = map[string]row{}
		for _, s := range libs {
			logf("%s %s c=%d round %d/%d", scenario, s.name, c, i+1, rounds)
			r, err := measure(s, cfg.addrs, load(c, s.name), oneKey)
			if err != nil {
				fatalf("%s: %v", s.name, err)
			}
			r.scenario = scenario
			byRound[i][s.name] = r
		}
	}
	return byRound
}

// pairedMedian picks lib's row from the round whose ratio to that round's
// set+del is the median, and records the median and range when paired.
func pairedMedian(byRound []map[string]row, lib string, paired bool) row {
	type rr struct {
		r row
		x float64
	}
	var all []rr
	for _, m := range byRound {
		r, ref := m[lib], m["set+del"]
		x := 0.0
		if ref.st.rate > 0 {
			x = r.st.rate / ref.st.rate
		}
		all = append(all, rr{r, x})
	}
	// Ties (set+del against itself is always 1) fall back to the rate, so
	// the reference's row is its median round too.
	slices.SortFunc(all, func(a, b rr) int { return cmp.Or(cmp.Compare(a.x, b.x), cmp.Compare(a.r.st.rate, b.r.st.rate)) })
	mid := all[len(all)/2]
	out := mid.r
	if paired {
		out.ratioMed, out.ratioMin, out.ratioMax = mid.x, all[0].x, all[len(all)-1].x
	}
	return out
}

func runHot(cfg *config, rep *report) {
	md := &rep.md
	rounds := max(cfg.rounds, 1)
	fmt.Fprintf(md, "### Hot key: all workers on one key (hold %s, think %s)\n\n", cfg.hold, cfg.think)
	md.WriteString("Wait is Lock's call to return; the ideal is first come, first served with the run's own hold and hand-over: (c−1)·(hold + hand-over p50). Hand-over is release → the next (already waiting) holder's Lock returns. Fairness is the fewest / most critical sections of one worker.\n\n")
	if rounds > 1 {
		fmt.Fprintf(md, "%d interleaved rounds per contention level; each library's row is its round with the median CS/s, and the targets use the median over rounds of each round's own ratios.\n\n", rounds)
	}
	fmt.Fprintf(md, "| library | c | CS/s | hold mean | wait p50 | wait p99 | ideal wait | p99 / ideal | hand-over p50 | in idle RTT | in loaded RTT | hand-over p99 | fairness min/max | fails | violations | client req/acq | server cmds/acq | server CPU/acq | client CPU/acq |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range cfg.cs {
		var libs []subject
		for _, s := range subjects() {
			if s.isLock && cfg.wantLib(s.name) {
				libs = append(libs, s)
			}
		}
		byRound := measureRounds(cfg, "hot", libs, c, rounds, cfg.hotLoad, true)
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
		for _, p := range []string{"redsync", "redislock", "seed"} {
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

func (rep *report) hotLine(r row) {
	id := r.ideal()
	fmt.Fprintf(&rep.md, "| %s | %d | %.0f | %s | %s | %s | %s | %s | %s | %.1f | %.1f | %s | %d/%d | %d | %d | %.2f | %.2f | %s | %s |\n",
		r.lib, r.c, r.st.rate, fmtD(r.st.holdMean), fmtD(r.st.waitP50), fmtD(r.st.waitP99), fmtD(id), ratio(float64(r.st.waitP99), float64(id)),
		fmtD(r.st.gapP50), float64(r.st.gapP50)/float64(rep.rtt), float64(r.st.gapP50)/float64(max(r.loadedRTT, 1)), fmtD(r.st.gapP99),
		r.st.fairMin, r.st.fairMax, r.st.fails, r.st.violations, r.reqPerAcq, r.cmdPerAcq, fmtD(r.cpuPerAcq), fmtD(r.cliPerAcq))
}

// --- many processes ---

// childResult is what a child process hands back through its output file.
type childResult struct {
	Recs []rec
	Reqs int64
	Live int64
	CPU  time.Duration // the child's CPU in the window
}

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

// selfCPU is this process's user+system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// setServer sets the per-acquisition server columns from a window's delta
// on nodes servers, less the tool's own INFO and PING commands.
func (r *row) setServer(d serverStat, nodes int, pings int64) {
	r.cmdPerAcq = float64(d.calls-2*int64(nodes)-pings) / float64(r.st.acq)
	r.cpuPerAcq = time.Duration(d.cpu * 1e9 / float64(r.st.acq))
}

// pinger measures PING on its own connection every 2ms while a load runs:
// the round trip as the load sees it, next to the idle one.
type pinger struct {
	done chan struct{}
	out  chan []time.Duration
	lat  []time.Duration
}

func startPinger(addr string) *pinger {
	p := &pinger{done: make(chan struct{}), out: make(chan []time.Duration, 1)}
	go func() {
		var lat []time.Duration
		defer func() { p.out <- lat }()
		c, err := redis.Dial("tcp", addr)
		if err != nil {
			return
		}
		defer c.Close()
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
			}
			t0 := time.Now()
			if _, err := c.Do("PING"); err != nil {
				return
			}
			lat = append(lat, time.Since(t0))
		}
	}()
	return p
}

func (p *pinger) stop() {
	if p == nil {
		return
	}
	close(p.done)
	p.lat = <-p.out
}

func (p *pinger) p50() time.Duration {
	if p == nil {
		return 0
	}
	return pct(p.lat, 50)
}

func (p *pinger) count() int64 {
	if p == nil {
		return 0
	}
	return int64(len(p.lat))
}

// --- Redlock ---

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

func fmtD(d time.Duration) string {
	switch {
	case d == 0:
		return "–"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	case d < time.Second:
		return fmt.Sprintf("%.0fms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}
