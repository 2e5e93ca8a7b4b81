package main

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// The burst scenario: a flash sale. N buyers arrive at once at one
// key, split over several processes; each loops Lock(wait) → sell one unit if
// any is left → release, retrying busy at once and errors after errBackoff,
// until it has bought, the stock is gone, or the run's time limit ends.

// burstBase is the baseline: 16 buyers at a time, a new one arriving each
// time one has bought, until burstBaseStock units are sold.
const burstBase = 16

// burstStock is the stock for n buyers: 2,500 for 6,000, in proportion.
func burstStock(n int) int { return max(n*5/12, 1) }

// burstRun is one library's result for one burst.
type burstRun struct {
	lib           string
	buyers, stock int
	closed        bool // the baseline
	st            stats
	sold          int
	soldOut       bool
	left          int // stock left at the end
	oversold      int // sales the stock does not account for (lost updates)
	first, last   int64
	sustained     float64 // sales/s from the first sale to the last
	waitP50       time.Duration
	waitP99       time.Duration // buyers' arrival → Lock returned, over the buyers that bought
	ideal         time.Duration
	busy, unavail int64
	other         int64
	releaseErrs   int64
	errs          map[string]int64
	reqPerAcq     float64
	cpuPerAcq     time.Duration
	cpu           time.Duration // Redis CPU from t0 until it was idle again; -1: unknown
	ran           time.Duration // t0 → the last child exited
	drain         time.Duration // the last child exited → Redis idle again
	maxQueue      int64         // -1: not locktag
	notices       int64         // messages on the lock's channel; -1: not locktag
	ghosts        int64         // of them "!": a grant to a waiter that had gone has lapsed
	stall         time.Duration // longest time without a sale while buyers waited
	stalls        int           // gaps > 100ms
	violations    int64
	notes         []string
}

// burstSales runs the sales of every library of cands that cfg wants —
// the baseline, then each buyer count of ns — writes their rows and
// notes, and returns every run and the baselines by library.
func (rep *report) burstSales(cfg *config, cands []burstLib, ns []int) ([]burstRun, map[string]burstRun) {
	rep.md.WriteString(burstHeader)
	var libs []burstLib
	for _, b := range cands {
		if cfg.wantLib(b.name) {
			libs = append(libs, b)
		}
	}
	base := map[string]burstRun{}
	var all []burstRun
	for _, b := range libs {
		r := runBurstOne(cfg, b, burstBase, cfg.burstBaseStock, true)
		base[b.name] = r
		all = append(all, r)
		rep.burstLine(r, r)
	}
	for _, n := range ns {
		for _, b := range libs {
			r := runBurstOne(cfg, b, n, burstStock(n), false)
			all = append(all, r)
			rep.burstLine(r, base[b.name])
		}
	}
	rep.md.WriteString("\n")
	rep.burstNotes(all)
	return all, base
}

func runBurst(cfg *config, rep *report) {
	md := &rep.md
	fmt.Fprintf(md, "### Burst: a flash sale on one key (%d processes, hold %s, wait %s, limit %s)\n\n", cfg.burstProcs, cfg.burstHold, cfg.burstWait, cfg.burstLimit)
	fmt.Fprintf(md, "N buyers arrive at once; stock N·5/12. Each loops Lock(wait %s) → if stock is left, sell one (GET, hold, SET) → release; busy is retried at once, errors after %s, until the buyer has bought, the stock is gone, or %s have passed. The %d-buyer rows are the baseline: %d buyers at a time, a new one arriving each time one has bought, until %d are sold. locktag runs on example-app's pool (MaxIdle 64, no MaxActive) with `Params{Wait: %s}` and a watchdog lease. Sold/s runs from the first sale to the last; wait is a buyer's arrival → its Lock returning, over the buyers that bought; ideal is FIFO: (buyers served − 1)·(hold + hand-over p50), buyers served being min(sold, buyers at a time). Stalls are gaps between sales (from t0, and to the end if stock was left) while buyers waited. Ghost grants are `!` notices on the lock's channel.\n\n",
		cfg.burstWait, errBackoff, cfg.burstLimit, burstBase, burstBase, cfg.burstBaseStock, cfg.burstWait)
	all, base := rep.burstSales(cfg, burstLibs(), cfg.burstNs)
	md.WriteString("\n| target | measured | met |\n|---|---|---|\n")
	for _, r := range all {
		b, ok := base[r.lib]
		if r.closed || !ok || (r.lib != "locktag" && r.lib != "locktag-pooled") {
			continue
		}
		x := ratioF(r.sustained, b.sustained)
		met := "yes"
		if x < 0.8 || !r.soldOut {
			met = "**no**"
		}
		fmt.Fprintf(md, "| %s, %d buyers: sustained sales/s ≥ 0.8× the 16-buyer rate, sold out | %.2f× (%.0f vs %.0f/s; sold %d of %d) | %s |\n",
			r.lib, r.buyers, x, r.sustained, b.sustained, r.sold, r.stock, met)
	}
	md.WriteString("\n")
}

// burstHeader heads the burst tables: a line per library and burst
// (burstLine).
const burstHeader = "| library | buyers | stock | sold | sold/s | × 16-buyer | busy | unavailable | other err | wait p50 | wait p99 | ideal FIFO | p99 / ideal | hold mean | hand-over p50 | Redis CPU/acq | Redis CPU / run | Redis busy after | max queue | longest stall | stalls > 100ms | ghost grants / notices | oversold | overlaps | client req/acq |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"

// burstNotes lists, under a burst table, each run's notes and its most
// frequent error texts.
func (rep *report) burstNotes(all []burstRun) {
	md := &rep.md
	for _, r := range all {
		if len(r.errs) == 0 && len(r.notes) == 0 {
			continue
		}
		fmt.Fprintf(md, "- %s, %d buyers:", r.lib, r.buyers)
		for _, n := range r.notes {
			fmt.Fprintf(md, " %s;", n)
		}
		for i, e := range sortedErrs(r.errs) {
			if i == 4 {
				fmt.Fprintf(md, " %d more texts;", len(r.errs)-i)
				break
			}
			fmt.Fprintf(md, " %d × `%s`;", r.errs[e], e)
		}
		md.WriteString("\n")
	}
}

func (rep *report) burstLine(r, base burstRun) {
	buyers := strconv.Itoa(r.buyers)
	if r.closed {
		buyers += " at a time"
	}
	na := func(v int64, s string) string {
		if v < 0 {
			return "n/a"
		}
		return s
	}
	cpuRun := "n/a"
	if r.cpu >= 0 {
		cpuRun = fmt.Sprintf("%s / %s", fmtD(r.cpu), fmtD(r.ran+r.drain))
	}
	fmt.Fprintf(&rep.md, "| %s | %s | %d | %d | %.0f | %s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s | %d | %d | %.2f |\n",
		r.lib, buyers, r.stock, r.sold, r.sustained, ratio(r.sustained, base.sustained), r.busy, r.unavail, r.other,
		fmtD(r.waitP50), fmtD(r.waitP99), fmtD(r.ideal), ratio(float64(r.waitP99), float64(r.ideal)),
		fmtD(r.st.holdMean), fmtD(r.st.gapP50), fmtD(r.cpuPerAcq), cpuRun, fmtD(r.drain),
		na(r.maxQueue, strconv.FormatInt(r.maxQueue, 10)), fmtD(r.stall), r.stalls,
		na(r.notices, fmt.Sprintf("%d / %d", r.ghosts, r.notices)), r.oversold, r.violations, r.reqPerAcq)
}

func ratioF(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func sortedErrs(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return int(m[b] - m[a]) })
	return keys
}

// runBurstOne runs n buyers of lib against a fresh key and stock, in
// cfg.burstProcs children, and stops them by pid if they outlive the limit.
func runBurstOne(cfg *config, lib burstLib, n, stock int, closed bool) burstRun {
	logf("burst %s buyers=%d stock=%d", lib.name, n, stock)
	r := burstRun{lib: lib.name, buyers: n, stock: stock, closed: closed, maxQueue: -1, notices: -1}
	// The lock's servers: the single server, or every Cluster master.
	addrs, tag := cfg.addrs[:1], ""
	if lib.cluster {
		addrs, tag = cfg.cluster, "c"
	}
	key := fmt.Sprintf("bench:%s:b%s:%s:%d", cfg.runID, tag, lib.name, n)
	stockKey := key + ":stock"
	admin, err := redis.Dial("tcp", cfg.stockAddr, redis.DialConnectTimeout(2*time.Second), redis.DialReadTimeout(5*time.Second))
	if err != nil {
		fatalf("burst: %v", err)
	}
	defer admin.Close()
	if _, err := admin.Do("SET", stockKey, stock); err != nil {
		fatalf("burst: %v", err)
	}
	var q *queueSampler
	var nc *noticeCounter
	if lib.queue {
		// locker's Redis layout as of this writing: the lock at
		// "locktag:{K}" (package doc), its waiter queue at ":q" and channel
		// at ":c" beside it (internals: if they move, max queue and ghost
		// grants read 0, which no burst of thousands can really show).
		addr := addrs[0]
		if lib.cluster { // the master of the lock's slot; the notices reach every node
			if addr, err = slotOwner(addr, "locktag:{"+key+"}"); err != nil {
				fatalf("burst: %v", err)
			}
		}
		q = sampleQueue(addr, "locktag:{"+key+"}:q", 50*time.Millisecond)
		if nc, err = countNotices(addr, "locktag:{"+key+"}:c"); err != nil {
			fatalf("burst: subscribe: %v", err)
		}
	}

	t0 := mono() + int64(2*time.Second)
	end := t0 + int64(cfg.burstLimit)
	procs := min(cfg.burstProcs, n)
	cs := startChildren("-burst-child", procs, func(p int) []string {
		return []string{"-lib", lib.name, "-addrs", strings.Join(addrs, ","), "-cluster=" + strconv.FormatBool(lib.cluster), "-key", key, "-stock", stockKey, "-stock-addr", cfg.stockAddr,
			"-c", strconv.Itoa(n/procs + btoi(p < n%procs)), "-base", strconv.Itoa(p * 1_000_000),
			"-t0", strconv.FormatInt(t0, 10), "-end", strconv.FormatInt(end, 10),
			"-hold", cfg.burstHold.String(), "-wait", cfg.burstWait.String(),
			"-closed=" + strconv.FormatBool(closed)}
	})
	defer cs.remove()
	time.Sleep(time.Duration(t0 - mono()))
	c0, err0 := serverStatsOf(addrs)
	waitChildren(cs.cmds, end+int64(30*time.Second), &r)
	tExit := mono()
	// Commands the buyers sent are still run after they have gone; the
	// run's Redis CPU includes them, and the next run must not meet them.
	for _, a := range addrs {
		d, idle := awaitIdle(a, 2*time.Minute)
		r.drain += d
		if !idle {
			r.notes = append(r.notes, fmt.Sprintf("Redis %s still slow %s after the buyers left", a, fmtD(d)))
		}
	}
	c1, err1 := serverStatsOf(addrs)
	if q != nil {
		r.maxQueue = q.stop()
	}
	if nc != nil {
		r.notices, r.ghosts = nc.stop()
		if nc.dropped.Load() {
			r.notes = append(r.notes, "the channel subscriber was dropped: notice counts are low")
		}
	}
	if r.left, err = redis.Int(admin.Do("GET", stockKey)); err != nil {
		r.notes = append(r.notes, "final stock unreadable: "+err.Error())
	}

	var acqs []burstRec
	var reqs int64
	r.errs = map[string]int64{}
	for p := range procs {
		var cr burstResult
		if err := cs.read(p, &cr); err != nil {
			r.notes = append(r.notes, fmt.Sprintf("process %d left no result: %v", p, err))
			continue
		}
		acqs = append(acqs, cr.Acqs...)
		r.busy += cr.Busy
		r.unavail += cr.Unavailable
		r.other += cr.Other
		r.releaseErrs += cr.ReleaseErrs
		r.violations += cr.Live
		reqs += cr.Reqs
		for k, v := range cr.Errors {
			r.errs[k] += v
		}
		if cr.Late > 100*time.Millisecond {
			r.notes = append(r.notes, fmt.Sprintf("process %d started %s late", p, fmtD(cr.Late)))
		}
		if cr.Stuck > 0 {
			r.notes = append(r.notes, fmt.Sprintf("process %d: %d buyers still in a call 15s after the end", p, cr.Stuck))
		}
	}
	if r.releaseErrs > 0 {
		r.notes = append(r.notes, fmt.Sprintf("%d releases failed", r.releaseErrs))
	}
	r.ran = time.Duration(tExit - t0)
	r.analyse(acqs, t0, min(tExit, end))
	if len(acqs) > 0 {
		r.reqPerAcq = float64(reqs) / float64(len(acqs))
	}
	if err := errors.Join(err0, err1); err != nil {
		r.cpu = -1
		r.notes = append(r.notes, "no Redis CPU: "+err.Error())
	} else {
		r.cpu = time.Duration(c1.sub(c0).cpu * 1e9)
		if len(acqs) > 0 {
			r.cpuPerAcq = r.cpu / time.Duration(len(acqs))
		}
	}
	return r
}

// analyse fills the sales figures from every acquisition of the run, which
// began at t0 and in which buyers waited until stop unless the stock ran out.
func (r *burstRun) analyse(acqs []burstRec, t0, stop int64) {
	plain := make([]rec, len(acqs))
	var sales []int64
	var waits []time.Duration
	for i, a := range acqs {
		plain[i] = a.rec
		if a.Sold {
			sales = append(sales, a.Acquired)
			waits = append(waits, time.Duration(a.Acquired-a.Arrived))
		}
	}
	r.st = analyse(plain, window{start: t0, end: stop + 1}, nil, true)
	r.violations += r.st.violations
	r.sold = len(sales)
	r.soldOut = r.left <= 0
	r.oversold = r.sold - (r.stock - r.left)
	r.waitP50, r.waitP99 = pct(waits, 50), pct(waits, 99)
	atOnce := r.buyers
	if r.closed {
		atOnce = burstBase
	}
	r.ideal = fcfsBound(min(atOnce, r.sold)-1, r.st)
	slices.Sort(sales)
	if len(sales) > 1 {
		r.first, r.last = sales[0], sales[len(sales)-1]
		r.sustained = float64(len(sales)-1) / (float64(r.last-r.first) / 1e9)
	}
	points := append([]int64{t0}, sales...)
	if !r.soldOut {
		points = append(points, stop)
	}
	for i := 1; i < len(points); i++ {
		g := time.Duration(points[i] - points[i-1])
		r.stall = max(r.stall, g)
		if g > 100*time.Millisecond {
			r.stalls++
		}
	}
}

// waitChildren waits for cmds until the mono time kill, then stops the ones
// left by their pids.
func waitChildren(cmds []*exec.Cmd, kill int64, r *burstRun) {
	done := make([]chan error, len(cmds))
	for i, c := range cmds {
		done[i] = make(chan error, 1)
		go func() { done[i] <- c.Wait() }()
	}
	timer := time.NewTimer(time.Duration(kill - mono()))
	defer timer.Stop()
	for i := range cmds {
		select {
		case err := <-done[i]:
			if err != nil {
				r.notes = append(r.notes, fmt.Sprintf("process %d: %v", i, err))
			}
			continue
		case <-timer.C:
		}
		for j := i; j < len(cmds); j++ {
			_ = cmds[j].Process.Kill()
		}
		for j := i; j < len(cmds); j++ {
			<-done[j]
		}
		r.notes = append(r.notes, fmt.Sprintf("processes %d..%d killed after the limit", i, len(cmds)-1))
		return
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
