package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware"
)

// The lock kinds scenario ("kinds"): what a read/write tag buys on a
// read-heavy route, and what a concurrency limit (semaphore) costs next to
// a mutex, all in one run. See docs/benchmarks-load.md#lock-kinds.

// semLimit is the semaphore's limit in the kinds scenario.
const semLimit = 4

// kindSubjects are locktag with each lock kind's Params: the mutex (the
// baseline), a semaphore of semLimit, a read hold and a write hold.
func kindSubjects() []subject {
	with := func(p locker.Params) func([]string, int, *atomic.Int64) (Lock, func(), error) {
		return func(addrs []string, c int, reqs *atomic.Int64) (Lock, func(), error) {
			p.TTL, p.Wait = lockTTL, time.Minute
			return locktagOn([]*redis.Pool{redigoPool(addrs[0], c, reqs)}, p)
		}
	}
	return []subject{
		{name: "mutex", isLock: true, nodes: 1, open: with(locker.Params{})},
		{name: fmt.Sprintf("semaphore (limit %d)", semLimit), isLock: true, nodes: 1, open: with(locker.Params{Limit: semLimit})},
		{name: "read", isLock: true, nodes: 1, open: with(locker.Params{Mode: locker.Read})},
		{name: "write", isLock: true, nodes: 1, open: with(locker.Params{Mode: locker.Write})},
	}
}

// kindTarget is one target line of the scenario.
type kindTarget struct {
	target, measured string
	ok               bool
	info             bool // context, not a target: no verdict
}

func runKinds(cfg *config, rep *report) {
	gin.SetMode(gin.ReleaseMode)
	md := &rep.md
	md.WriteString("### Lock kinds\n\n")
	var tg []kindTarget
	tg = append(tg, runReadHeavy(cfg, md)...)
	tg = append(tg, runKindsUncontended(cfg, md)...)
	tg = append(tg, runSemContended(cfg, md)...)
	md.WriteString("#### Lock kinds: targets, measured in this run\n\n| target | measured | met |\n|---|---|---|\n")
	for _, t := range tg {
		m := "yes"
		switch {
		case t.info:
			m = "–"
		case !t.ok:
			m = "**no**"
		}
		fmt.Fprintf(md, "| %s | %s | %s |\n", t.target, t.measured, m)
	}
	md.WriteString("\n")
}

// contendedCs are the run's contention levels of at least 16 (the kinds
// scenario's HTTP rows), or the largest level when none is.
func contendedCs(cfg *config) []int {
	var cs []int
	for _, c := range cfg.cs {
		if c >= 16 {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		cs = cfg.cs[len(cfg.cs)-1:]
	}
	return cs
}

// --- read-heavy route over HTTP ---

// Tags of the read-heavy route: GET reads, PUT writes one item; the mutex
// row gives both the same tag without mode.
const (
	readTag  = `key:"item:{path.id}" mode:"read" wait:"30s"`
	writeTag = `key:"item:{path.id}" mode:"write" wait:"30s"`
	mutexTag = `key:"item:{path.id}" wait:"30s"`
)

// rhResult is one read-heavy run.
type rhResult struct {
	rate               float64 // requests/s
	reads, writes      int
	readP50, readP99   time.Duration
	writeP50, writeP99 time.Duration
	writeMax           time.Duration
	fails              int
	overlaps           int64 // a writer inside with anyone else (must be 0)
	reqPerReq          float64
	maxReaders         int32
}

func runReadHeavy(cfg *config, md *strings.Builder) []kindTarget {
	fmt.Fprintf(md, "#### Read-heavy route over HTTP: read/write tag vs mutex tag\n\n")
	fmt.Fprintf(md, "A Gin server over loopback; every client loops on one item: 90%% `GET /items/1` (tag `%s`), 10%% `PUT /items/1` (tag `%s`), each handler holding the lock %s. The mutex rows give both routes `%s`. The \"direct\" rows run the same mix through `Obtain` and `Release` in one process, without HTTP: what the lock kinds alone allow. Latency is the client's whole request (lock wait, hold, HTTP); a write's is its wait for the readers admitted before it plus its own hold. Overlaps counts writers that found anyone else inside (must be 0); max readers is the most readers inside at once; Redis req/req is the Locker's client requests per request.\n\n",
		readTag, writeTag, cfg.hold, mutexTag)
	rounds := max(cfg.rounds, 1)
	if rounds > 1 {
		fmt.Fprintf(md, "%d interleaved rounds per client count and path (mutex, then read/write, per round); each row is its round with the median req/s, the ratio the median of the per-round ratios (range in brackets).\n\n", rounds)
	}
	md.WriteString("| path | tags | clients | req/s | × mutex | read p50 | read p99 | write p50 | write p99 | write max | max readers | overlaps | fails | Redis req/req |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var tg []kindTarget
	for _, c := range contendedCs(cfg) {
		for _, direct := range []bool{false, true} {
			path := "HTTP (Gin)"
			if direct {
				path = "direct"
			}
			var mx, rw []rhResult
			var ratios []float64
			for i := range rounds {
				logf("kinds read-heavy %s c=%d round %d/%d", path, c, i+1, rounds)
				m := readHeavyRun(cfg, c, false, direct)
				r := readHeavyRun(cfg, c, true, direct)
				mx, rw = append(mx, m), append(rw, r)
				if m.rate > 0 {
					ratios = append(ratios, r.rate/m.rate)
				}
			}
			byRate := func(a, b rhResult) int { return cmp.Compare(a.rate, b.rate) }
			slices.SortFunc(mx, byRate)
			slices.SortFunc(rw, byRate)
			m, r := mx[len(mx)/2], rw[len(rw)/2]
			x := medRange(ratios)
			for _, row := range []struct {
				name string
				r    rhResult
				x    string
			}{{"mutex", m, "1×"}, {"read/write", r, fmt.Sprintf("%.2f×", x[0])}} {
				if rounds > 1 && row.name != "mutex" {
					row.x += fmt.Sprintf(" (%.2f–%.2f)", x[1], x[2])
				}
				fmt.Fprintf(md, "| %s | %s | %d | %.0f | %s | %s | %s | %s | %s | %s | %d | %d | %d | %.2f |\n", path, row.name, c, row.r.rate, row.x,
					fmtD(row.r.readP50), fmtD(row.r.readP99), fmtD(row.r.writeP50), fmtD(row.r.writeP99), fmtD(row.r.writeMax),
					row.r.maxReaders, row.r.overlaps, row.r.fails, row.r.reqPerReq)
			}
			if direct {
				tg = append(tg, kindTarget{fmt.Sprintf("read-heavy c=%d without HTTP (context, not a target)", c), fmt.Sprintf("%.2f× (%.0f vs %.0f); writer wait p99 %s", x[0], r.rate, m.rate, fmtD(r.writeP99)), true, true})
				continue
			}
			tg = append(tg,
				kindTarget{fmt.Sprintf("read-heavy c=%d: read/write req/s ≥ 5× mutex", c), fmt.Sprintf("%.2f× (%.0f vs %.0f)", x[0], r.rate, m.rate), x[0] >= 5, false},
				kindTarget{fmt.Sprintf("read-heavy c=%d: writer wait p99 (observed bound)", c),
					fmt.Sprintf("%s = %.0f holds (mutex route's write p99 %s); overlaps %d", fmtD(r.writeP99), float64(r.writeP99)/float64(max(cfg.hold, 1)), fmtD(m.writeP99), r.overlaps),
					r.overlaps == 0 && r.fails == 0, false})
		}
	}
	md.WriteString("\n")
	return tg
}

// readHeavyRun drives c clients through the read-heavy mix for the window
// on a fresh Locker: over HTTP, a Gin server with the item routes tagged
// with the read/write tags (rw) or the mutex tag; or, with direct, the same
// mix through Obtain and Release in this process (the lock alone, no HTTP).
func readHeavyRun(cfg *config, c int, rw, direct bool) rhResult {
	var reqs atomic.Int64
	pool := redigoPool(cfg.addrs[0], c, &reqs)
	defer pool.Close()
	lk, err := locker.New(redigo.New(pool))
	if err != nil {
		fatalf("kinds: %v", err)
	}
	defer lk.Close()

	var inR, inW, maxR atomic.Int32
	var overlaps atomic.Int64
	// read and write are the critical sections; a mutex's readers exclude
	// each other too, so they count as writers.
	read := func() {
		if inW.Load() > 0 {
			overlaps.Add(1)
		}
		r := inR.Add(1)
		for p := maxR.Load(); r > p && !maxR.CompareAndSwap(p, r); p = maxR.Load() {
		}
		time.Sleep(cfg.hold)
		inR.Add(-1)
	}
	write := func() {
		if inW.Add(1) > 1 || inR.Load() > 0 {
			overlaps.Add(1)
		}
		time.Sleep(cfg.hold)
		inW.Add(-1)
	}
	if !rw {
		read = write
	}
	var do func(isWrite bool) bool
	if direct {
		rp, wp := locker.Params{Wait: 30 * time.Second}, locker.Params{Wait: 30 * time.Second}
		if rw {
			rp.Mode, wp.Mode = locker.Read, locker.Write
		}
		do = func(isWrite bool) bool {
			p, cs := rp, read
			if isWrite {
				p, cs = wp, write
			}
			le, err := lk.Obtain(context.Background(), "item:1", p)
			if err != nil {
				return false
			}
			cs()
			return le.Release(context.Background()) == nil
		}
	} else {
		rt, wt := mutexTag, mutexTag
		if rw {
			rt, wt = readTag, writeTag
		}
		r := gin.New()
		r.GET("/items/:id", middleware.Lock(lk, rt), func(ctx *gin.Context) { read(); ctx.String(http.StatusOK, "item") })
		r.PUT("/items/:id", middleware.Lock(lk, wt), func(ctx *gin.Context) { write(); ctx.Status(http.StatusNoContent) })
		srv, client := serveE2E(r, c)
		defer srv.Close()
		defer client.CloseIdleConnections()
		do = func(isWrite bool) bool {
			method := http.MethodGet
			if isWrite {
				method = http.MethodPut
			}
			req, _ := http.NewRequest(method, srv.URL+"/items/1", nil)
			resp, err := client.Do(req)
			if err != nil {
				return false
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode < 300
		}
	}

	t0 := time.Now()
	start, end := t0.Add(cfg.warm), t0.Add(cfg.warm+cfg.dur)
	var mu sync.Mutex
	var rl, wl []time.Duration
	var fails atomic.Int64
	var r0, r1 int64
	var wg sync.WaitGroup
	for w := range c {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 16))
			var mr, mw []time.Duration
			for {
				t := time.Now()
				if !t.Before(end) {
					break
				}
				isWrite := rng.IntN(10) == 0
				if !do(isWrite) {
					fails.Add(1)
				}
				if t.Before(start) {
					continue
				}
				if isWrite {
					mw = append(mw, time.Since(t))
				} else {
					mr = append(mr, time.Since(t))
				}
			}
			mu.Lock()
			rl, wl = append(rl, mr...), append(wl, mw...)
			mu.Unlock()
		})
	}
	time.Sleep(time.Until(start))
	r0 = reqs.Load()
	time.Sleep(time.Until(end))
	r1 = reqs.Load()
	wg.Wait()
	out := rhResult{reads: len(rl), writes: len(wl), fails: int(fails.Load()), overlaps: overlaps.Load(), maxReaders: maxR.Load()}
	n := len(rl) + len(wl)
	out.rate = float64(n) / cfg.dur.Seconds()
	out.readP50, out.readP99 = pct(rl, 50), pct(rl, 99)
	out.writeP50, out.writeP99 = pct(wl, 50), pct(wl, 99)
	if len(wl) > 0 {
		out.writeMax = slices.Max(wl)
	}
	if n > 0 {
		out.reqPerReq = float64(r1-r0) / float64(n)
	}
	if !rw {
		out.maxReaders = 1
	}
	return out
}
