package main

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"slices"
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
	var a0, a1 runtime.MemStats
	recs, w, live := drive(l, ld, mono(), func(start bool) {
		if start {
			m0, m0ok = readCPU()
			runtime.ReadMemStats(&a0)
			r0, c0, u0 = reqs.Load(), serverStatsAll(addrs), selfCPU()
			if oneKey {
				pg = startPinger(addrs[0])
			}
		} else {
			pg.stop()
			r1, c1, u1 = reqs.Load(), serverStatsAll(addrs), selfCPU()
			runtime.ReadMemStats(&a1)
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
		r.allocs = float64(a1.Mallocs-a0.Mallocs) / float64(st.acq)
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
	if cfg.scenarios["waiters"] { // only when named
		runWaiters(cfg, rep) // bench/waiters.go
	}
	if cfg.scenarios["hotloop"] { // only when named
		runHotLoop(cfg, rep) // bench/hotloop.go
	}
	if cfg.scenarios["burst-kinds"] { // only when named
		runBurstKinds(cfg, rep) // bench/burst_kinds.go
	}
	if cfg.scenarios["cluster"] { // only when named
		runCluster(cfg, rep) // bench/cluster_run.go
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
	md.WriteString(uncontendedHeader)
	var machines, drivers, peers []string
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
			rep.uncontendedLine(r, ref)
		}
		machines = append(machines, fmt.Sprintf("- c = %d: %s\n", c, machineRange(byRound)))
		drivers = append(drivers, driverRatios(byRound, libs, c, func(r row) float64 { return r.st.rate })...)
		peers = append(peers, samePeerRatios(byRound, c, func(r row) float64 { return r.st.rate })...)
	}
	md.WriteString("\nThe machine during each contention level's windows:\n\n")
	for _, m := range machines {
		md.WriteString(m)
	}
	md.WriteString("\n")
	writeDriverRatios(md, "pairs/s", drivers)
	writeSamePeerRatios(md, "pairs/s", peers)
}

// uncontendedHeader heads the uncontended tables: a line per library and
// contention level (uncontendedLine).
const uncontendedHeader = "| library | c | pairs/s | × set+del | p50 | p99 | client req/acq | server cmds/acq | server CPU/acq | client CPU/acq | client allocs/acq | busy / steal / load |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"

// uncontendedLine writes r's line, its pairs/s against ref's (set+del).
func (rep *report) uncontendedLine(r, ref row) {
	x := fmt.Sprintf("%.2f×", r.vsRef(ref))
	if r.ratioMed > 0 {
		x += fmt.Sprintf(" (%.2f–%.2f)", r.ratioMin, r.ratioMax)
	}
	fmt.Fprintf(&rep.md, "| %s | %d | %.0f | %s | %s | %s | %.2f | %.2f | %s | %s | %.1f | %s |\n", r.lib, r.c, r.st.rate, x,
		fmtD(r.st.pairP50), fmtD(r.st.pairP99), r.reqPerAcq, r.cmdPerAcq, fmtD(r.cpuPerAcq), fmtD(r.cliPerAcq), r.allocs, r.mach)
}

// samePeerRatios compares, for each pair of samePeers that ran, locktag
// on the driver with the peer on the same client library at c: the
// median and range over the rounds of each round's ratio of metric.
func samePeerRatios(byRound []map[string]row, c int, metric func(row) float64) []string {
	var out []string
	for _, pair := range samePeers {
		var x []float64
		for _, m := range byRound {
			a, ok1 := m[pair[0]]
			b, ok2 := m[pair[1]]
			if ok1 && ok2 && metric(b) > 0 {
				x = append(x, metric(a)/metric(b))
			}
		}
		if len(x) == 0 {
			continue
		}
		v := medRange(x)
		out = append(out, fmt.Sprintf("| %s ÷ %s | %d | %.2f× (%.2f–%.2f) | %d |\n", pair[0], pair[1], c, v[0], v[1], v[2], len(x)))
	}
	return out
}

// writeSamePeerRatios writes the lines of samePeerRatios as a table.
func writeSamePeerRatios(md *strings.Builder, metric string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(md, "locktag on a driver against the peer on the same client library (go-redis: both on goredisClient's settings; rueidis: locktag on rueidis' defaults, rueidislock on the client it builds), %s: the median of the per-round ratios (range).\n\n| locktag ÷ peer | c | %s | rounds |\n|---|---:|---:|---:|\n", metric, metric)
	for _, l := range lines {
		md.WriteString(l)
	}
	md.WriteString("\n")
}

// driverRatios compares locktag on its other drivers with locktag on
// redigo (the default) at c: the median and range over the rounds of each
// round's ratio of metric, one line per driver in libs. Nothing unless
// locktag and another driver ran.
func driverRatios(byRound []map[string]row, libs []subject, c int, metric func(row) float64) []string {
	var out []string
	for _, s := range libs {
		if !strings.HasPrefix(s.name, "locktag-") || s.name == "locktag-pooled" || !s.isLock {
			continue
		}
		var x []float64
		for _, m := range byRound {
			base, ok1 := m["locktag"]
			r, ok2 := m[s.name]
			if ok1 && ok2 && metric(base) > 0 {
				x = append(x, metric(r)/metric(base))
			}
		}
		if len(x) == 0 {
			continue
		}
		v := medRange(x)
		out = append(out, fmt.Sprintf("| %s | %d | %.2f× (%.2f–%.2f) | %d |\n", s.name, c, v[0], v[1], v[2], len(x)))
	}
	return out
}

// writeDriverRatios writes the lines of driverRatios as a table.
func writeDriverRatios(md *strings.Builder, metric string, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(md, "Drivers against locktag on redigo (the default), %s: the median of the per-round ratios (range).\n\n| driver | c | %s ÷ locktag | rounds |\n|---|---:|---:|---:|\n", metric, metric)
	for _, l := range lines {
		md.WriteString(l)
	}
	md.WriteString("\n")
}

// measureRounds measures every library once per round, one after another,
// and returns each round's rows by library.
func measureRounds(cfg *config, scenario string, libs []subject, c, rounds int, load func(c int, tag string) load, oneKey bool) []map[string]row {
	return measureRoundsOn(cfg.addrs, scenario, libs, c, rounds, load, oneKey)
}

// measureRoundsOn is measureRounds on the servers addrs.
func measureRoundsOn(addrs []string, scenario string, libs []subject, c, rounds int, load func(c int, tag string) load, oneKey bool) []map[string]row {
	byRound := make([]map[string]row, rounds)
	for i := range rounds {
		byRound[i] = map[string]row{}
		for _, s := range libs {
			logf("%s %s c=%d round %d/%d", scenario, s.name, c, i+1, rounds)
			r, err := measure(s, addrs, load(c, s.name), oneKey)
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
