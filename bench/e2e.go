package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/middleware"
)

// e2eTag is the lock tag on the measured route; every worker asks for its
// own order id, so this measures what the tag costs, not contention.
const e2eTag = `key:"order:{path.id}" expire:"10s"`

// runE2E drives a Gin route over loopback HTTP with and without a lock tag.
func runE2E(cfg *config, rep *report) {
	md := &rep.md
	fmt.Fprintf(md, "### End to end: Gin route over loopback HTTP, with and without `middleware.Lock`\n\n")
	fmt.Fprintf(md, "`GET /orders/:id/pay` answering 200 \"ok\", tag `%s`, each worker on its own id; the load generator, the server and Redis share this machine. \"by hand\" is the untagged route whose handler calls Obtain and Release itself (same key, same lease): tag − by hand is what the middleware (key evaluation, context, status mapping) costs on top of the lock. Extra = p50(route) − p50(no tag) − 2·RTT (idle PING), i.e. what is added beyond the lock's own two round trips; allocs are per request in the whole process (client + server + locker).\n\n", e2eTag)
	fmt.Fprintf(md, "| route | c | req/s | p50 | p99 | allocs/req | extra beyond 2 RTT | extra / p50(no tag) |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	gin.SetMode(gin.ReleaseMode)
	for _, c := range cfg.cs {
		var base row
		for _, mode := range []string{"no tag", "lock tag", "by hand"} {
			name := mode
			logf("e2e %s c=%d", name, c)
			r := e2eRun(cfg, c, mode)
			r.lib = name
			rep.rows = append(rep.rows, r)
			extra, rel := "–", "–"
			if mode != "no tag" {
				x := r.st.pairP50 - base.st.pairP50 - 2*rep.rtt
				extra = fmtSigned(x)
				rel = fmt.Sprintf("%.1f%%", 100*float64(x)/float64(base.st.pairP50))
				r.note = rel
			} else {
				base = r
			}
			fmt.Fprintf(md, "| %s | %d | %.0f | %s | %s | %.0f | %s | %s |\n", name, c, r.st.rate, fmtD(r.st.pairP50), fmtD(r.st.pairP99), r.allocs, extra, rel)
		}
	}
	md.WriteString("\n")
}

func e2eRun(cfg *config, c int, mode string) row {
	var reqs atomic.Int64
	pool := redigoPool(cfg.addrs[0], c, &reqs)
	defer pool.Close()
	lk := locker.New(pool)
	defer lk.Close()
	r := gin.New()
	h := func(ctx *gin.Context) { ctx.String(http.StatusOK, "ok") }
	switch mode {
	case "lock tag":
		r.GET("/orders/:id/pay", middleware.Lock(lk, e2eTag), h)
	case "by hand":
		r.GET("/orders/:id/pay", func(ctx *gin.Context) {
			le, err := lk.Obtain(ctx.Request.Context(), "order:"+ctx.Param("id"), locker.Params{TTL: 10 * time.Second})
			if err != nil {
				ctx.String(http.StatusConflict, "busy")
				return
			}
			defer le.Release(ctx.Request.Context())
			h(ctx)
		})
	default:
		r.GET("/orders/:id/pay", h)
	}
	srv := httptest.NewServer(r)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: c + 8, MaxIdleConnsPerHost: c + 8}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()

	t0 := time.Now()
	start, end := t0.Add(cfg.warm), t0.Add(cfg.warm+cfg.dur)
	var mu sync.Mutex
	var lat []time.Duration
	var errs atomic.Int64
	var wg sync.WaitGroup
	for w := range c {
		wg.Go(func() {
			url := fmt.Sprintf("%s/orders/%d/pay", srv.URL, w)
			var mine []time.Duration
			for {
				t := time.Now()
				if !t.Before(end) {
					break
				}
				resp, err := client.Get(url)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						errs.Add(1)
					}
				} else {
					errs.Add(1)
				}
				if !t.Before(start) {
					mine = append(mine, time.Since(t))
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	var m0, m1 runtime.MemStats
	time.Sleep(time.Until(start))
	runtime.ReadMemStats(&m0)
	time.Sleep(time.Until(end))
	runtime.ReadMemStats(&m1)
	wg.Wait()
	out := row{scenario: "e2e", c: c}
	out.st.acq = len(lat)
	out.st.rate = float64(len(lat)) / cfg.dur.Seconds()
	out.st.pairP50, out.st.pairP99 = pct(lat, 50), pct(lat, 99)
	out.st.fails = int(errs.Load())
	if len(lat) > 0 {
		out.allocs = float64(m1.Mallocs-m0.Mallocs) / float64(len(lat))
	}
	return out
}

func fmtSigned(d time.Duration) string {
	if d < 0 {
		return "−" + fmtD(-d)
	}
	return "+" + fmtD(d)
}
