package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// The burst-kinds scenario: the flash-sale burst (burst.go) for a lock kind
// other than the mutex — a semaphore of burstPermits permits. N waiters
// arrive at once at one key, split over cfg.burstProcs processes; each
// takes a permit once (Params{Limit, Wait}), holds it cfg.burstHold and
// releases. The baseline is burstBase waiters at a time, a new one arriving
// each time one is served, until burstKindsBaseAcqs are served. Holders
// count themselves in and out of a counter on the stock server (a Lua
// script per step), which keeps the most at once: never above the limit.

// burstPermits is the semaphore's limit.
const burstPermits = 8

// burstKindsBaseAcqs is how many acquisitions the baseline makes.
const burstKindsBaseAcqs = 800

// burstKindsRun is one burst of the semaphore.
type burstKindsRun struct {
	waiters     int
	closed      bool // the baseline
	served      int
	rate        float64 // acquisitions/s from the first to the last
	waitP50     time.Duration
	waitP99     time.Duration // arrival → Obtain returned, over the served
	busy        int64
	unavail     int64
	other       int64
	lost        int64 // holds whose lease was lost before release
	releaseErrs int64
	peak        int64 // most holders at once (the stock server's counter)
	reqPerAcq   float64
	notes       []string
}

// burstKindsResult is what a burst-kinds child hands back.
type burstKindsResult struct {
	Waits    []time.Duration // of the served
	Acquired []int64         // mono times
	Busy, Unavailable, Other,
	Lost, ReleaseErrs, Reqs int64
	Errors map[string]int64
}

// occEnterScript counts a holder in (KEYS[1]) and keeps the most at once
// (KEYS[2]); occLeaveScript counts it out.
var (
	occEnterScript = redis.NewScript(2, `local n = redis.call('INCR', KEYS[1])
if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
return n`)
	occLeaveScript = redis.NewScript(1, `return redis.call('DECR', KEYS[1])`)
)

func runBurstKinds(cfg *config, rep *report) {
	md := &rep.md
	fmt.Fprintf(md, "### Burst by kind: a semaphore of %d permits (%d processes, hold %s, wait %s)\n\n", burstPermits, cfg.burstProcs, cfg.burstHold, cfg.burstLimit)
	fmt.Fprintf(md, "N waiters arrive at once at one key; each takes a permit once with `Params{Limit: %d, Wait: %s}` and a watchdog lease, holds it %s and releases. The %d-waiter row is the baseline: %d waiters at a time, a new one arriving each time one is served, until %d are served. acq/s runs from the first acquisition to the last; wait is a waiter's arrival → its Obtain returning, over the served. Peak holders is the most counted in at once across the processes (a counter on the stock server): never above %d.\n\n",
		burstPermits, cfg.burstLimit, cfg.burstHold, burstBase, burstBase, burstKindsBaseAcqs, burstPermits)
	md.WriteString("| kind | waiters | served | acq/s | × 16 at a time | busy | unavailable | other err | lost | wait p50 | wait p99 | peak holders | client req/acq |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	base := runBurstKindsOne(cfg, burstBase, true)
	rep.burstKindsLine(base, base)
	all := []burstKindsRun{base}
	for _, n := range cfg.burstNs {
		r := runBurstKindsOne(cfg, n, false)
		rep.burstKindsLine(r, base)
		all = append(all, r)
	}
	md.WriteString("\n")
	for _, r := range all {
		if len(r.notes) > 0 {
			fmt.Fprintf(md, "- %d waiters: %v\n", r.waiters, r.notes)
		}
	}
	md.WriteString("\n")
}

func (rep *report) burstKindsLine(r, base burstKindsRun) {
	waiters := strconv.Itoa(r.waiters)
	if r.closed {
		waiters += " at a time"
	}
	fmt.Fprintf(&rep.md, "| semaphore (limit %d) | %s | %d | %.0f | %s | %d | %d | %d | %d | %s | %s | %d | %.2f |\n",
		burstPermits, waiters, r.served, r.rate, ratio(r.rate, base.rate), r.busy, r.unavail, r.other, r.lost,
		fmtD(r.waitP50), fmtD(r.waitP99), r.peak, r.reqPerAcq)
}

// runBurstKindsOne runs n waiters (closed: n at a time until
// burstKindsBaseAcqs are served) in cfg.burstProcs children.
func runBurstKindsOne(cfg *config, n int, closed bool) burstKindsRun {
	logf("burst-kinds semaphore waiters=%d closed=%t", n, closed)
	r := burstKindsRun{waiters: n, closed: closed}
	key := fmt.Sprintf("bench:%s:bk:%d:%t", cfg.runID, n, closed)
	occ := key + ":occ"
	procs := min(cfg.burstProcs, n)
	t0 := mono() + int64(2*time.Second)
	end := t0 + int64(cfg.burstLimit)
	cs := startChildren("-burst-kinds-child", procs, func(p int) []string {
		share := n/procs + btoi(p < n%procs)
		acqs := 0
		if closed {
			acqs = burstKindsBaseAcqs/procs + btoi(p < burstKindsBaseAcqs%procs)
		}
		return []string{"-addr", cfg.addrs[0], "-occ-addr", cfg.stockAddr, "-key", key, "-occ", occ,
			"-c", strconv.Itoa(share), "-acqs", strconv.Itoa(acqs), "-base", strconv.Itoa(p * 1_000_000),
			"-t0", strconv.FormatInt(t0, 10), "-end", strconv.FormatInt(end, 10),
			"-hold", cfg.burstHold.String(), "-wait", cfg.burstLimit.String()}
	})
	defer cs.remove()
	var br burstRun
	waitChildren(cs.cmds, end+int64(30*time.Second), &br)
	r.notes = append(r.notes, br.notes...)

	var waits []time.Duration
	var acquired []int64
	var reqs int64
	for p := range procs {
		var cr burstKindsResult
		if err := cs.read(p, &cr); err != nil {
			r.notes = append(r.notes, fmt.Sprintf("process %d left no result: %v", p, err))
			continue
		}
		waits = append(waits, cr.Waits...)
		acquired = append(acquired, cr.Acquired...)
		r.busy += cr.Busy
		r.unavail += cr.Unavailable
		r.other += cr.Other
		r.lost += cr.Lost
		r.releaseErrs += cr.ReleaseErrs
		reqs += cr.Reqs
		for e, k := range cr.Errors {
			r.notes = append(r.notes, fmt.Sprintf("%d × `%s`", k, e))
		}
	}
	if r.releaseErrs > 0 {
		r.notes = append(r.notes, fmt.Sprintf("%d releases failed", r.releaseErrs))
	}
	r.served = len(acquired)
	r.waitP50, r.waitP99 = pct(waits, 50), pct(waits, 99)
	slices.Sort(acquired)
	if len(acquired) > 1 {
		r.rate = float64(len(acquired)-1) / (float64(acquired[len(acquired)-1]-acquired[0]) / 1e9)
	}
	if r.served > 0 {
		r.reqPerAcq = float64(reqs) / float64(r.served)
	}
	c, err := redis.Dial("tcp", cfg.stockAddr, redis.DialConnectTimeout(2*time.Second), redis.DialReadTimeout(5*time.Second))
	if err != nil {
		fatalf("burst-kinds: %v", err)
	}
	defer c.Close()
	if r.peak, err = redis.Int64(c.Do("GET", occ+":max")); err != nil && !errors.Is(err, redis.ErrNil) {
		r.notes = append(r.notes, "peak unreadable: "+err.Error())
	}
	if r.peak > burstPermits {
		r.notes = append(r.notes, fmt.Sprintf("**%d holders at once, limit %d**", r.peak, burstPermits))
	}
	return r
}

// burstKindsChildMain is a burst-kinds child: -c waiters, each taking a
// permit once at the mono time -t0 (or, with -acqs, looping until this
// process has served that many).
func burstKindsChildMain(args []string) int {
	fs := flag.NewFlagSet("burst-kinds-child", flag.ContinueOnError)
	addr := fs.String("addr", "", "")
	occAddr := fs.String("occ-addr", "", "")
	key := fs.String("key", "", "")
	occ := fs.String("occ", "", "")
	out := fs.String("out", "", "")
	c := fs.Int("c", 1, "")
	acqs := fs.Int("acqs", 0, "")
	base := fs.Int("base", 0, "")
	t0 := fs.Int64("t0", 0, "")
	end := fs.Int64("end", 0, "")
	hold := fs.Duration("hold", 0, "")
	wait := fs.Duration("wait", 0, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var reqs atomic.Int64
	pool := readmePool(*addr, &reqs)
	defer pool.Close()
	lk, err := locker.New(redigo.New(pool))
	if err != nil {
		fmt.Fprintf(os.Stderr, "burst-kinds child: %v\n", err)
		return 1
	}
	occPool := &redis.Pool{MaxIdle: 16, Dial: func() (redis.Conn, error) {
		return redis.Dial("tcp", *occAddr, redis.DialConnectTimeout(2*time.Second),
			redis.DialReadTimeout(3*time.Second), redis.DialWriteTimeout(3*time.Second))
	}}
	defer occPool.Close()
	count := func(s *redis.Script, keys ...any) {
		oc := occPool.Get()
		defer oc.Close()
		_, _ = s.Do(oc, keys...)
	}
	// Warm the pool and the subscriber as a service that has been serving.
	var warm sync.WaitGroup
	for i := range 64 {
		warm.Go(func() {
			k := fmt.Sprintf("%s:warm:%d:%d", *key, *base, i)
			if le, err := lk.Obtain(context.Background(), k, locker.Params{Limit: burstPermits}); err == nil {
				_ = le.Release(context.Background())
			}
		})
	}
	warm.Wait()

	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Duration(*end-mono())))
	defer cancel()
	var mu sync.Mutex
	res := burstKindsResult{Errors: map[string]int64{}}
	var busy, unavail, other, lost, relErrs atomic.Int64
	var left atomic.Int64
	left.Store(int64(*acqs))
	p := locker.Params{Limit: burstPermits, Wait: *wait}
	time.Sleep(time.Duration(*t0 - mono()))
	r0 := reqs.Load()
	var wg sync.WaitGroup
	for range *c {
		wg.Go(func() {
			arrived := mono()
			for ctx.Err() == nil {
				le, err := lk.Obtain(ctx, *key, p)
				got := mono()
				if err != nil {
					switch {
					case ctx.Err() != nil:
						return
					case errors.Is(err, locker.ErrUnavailable):
						unavail.Add(1)
					case errors.Is(err, locker.ErrNotObtained):
						busy.Add(1)
					default:
						other.Add(1)
					}
					mu.Lock()
					if msg := addrRE.ReplaceAllString(err.Error(), "ADDR"); len(res.Errors) < maxErrTexts || res.Errors[msg] > 0 {
						res.Errors[msg]++
					}
					mu.Unlock()
					if *acqs == 0 {
						return
					}
					continue
				}
				count(occEnterScript, *occ, *occ+":max")
				time.Sleep(*hold)
				count(occLeaveScript, *occ)
				if le.Context().Err() != nil {
					lost.Add(1)
				}
				if err := le.Release(context.Background()); err != nil {
					relErrs.Add(1)
				}
				mu.Lock()
				res.Waits = append(res.Waits, time.Duration(got-arrived))
				res.Acquired = append(res.Acquired, got)
				mu.Unlock()
				if *acqs == 0 || left.Add(-1) <= 0 {
					return
				}
				arrived = mono()
			}
		})
	}
	wg.Wait()
	res.Reqs = reqs.Load() - r0
	res.Busy, res.Unavailable, res.Other, res.Lost, res.ReleaseErrs = busy.Load(), unavail.Load(), other.Load(), lost.Load(), relErrs.Load()
	_ = lk.Close()
	b, _ := json.Marshal(res)
	if err := os.WriteFile(*out, b, 0o600); err != nil {
		fmt.Fprintf(os.Stderr, "burst-kinds child: %v\n", err)
		return 1
	}
	return 0
}
