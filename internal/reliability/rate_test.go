package reliability

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/reliability/faults"
	"github.com/locktag/locktag/locker"
)

// The rater child's terms, beside childEnv's address, key and prefix.
const (
	envRateN       = "LT_RATE_N"       // requests per period
	envRatePeriod  = "LT_RATE_PERIOD"  // the period
	envRatePeriods = "LT_RATE_PERIODS" // how many periods the load lasts
	envRateOffer   = "LT_RATE_OFFER"   // requests this child offers per period
)

// TestRateLimitAcrossProcesses: 3 processes share one key limited to N
// requests per period and together offer 5×N per period for 30 periods.
// The key admits N per period, ± 1%, averaged over the load (the first
// burst of N aside): the count of admissions against the span of the load
// measured by the Redis server's own clock, which is the clock the limit
// runs on. The control gives each process a limiter of its own (a key
// prefix each): the same load then admits about 3×N per period, so the
// count catches a limit that is not shared.
//
// Each process also counts its admissions per period by the wall clock
// (one machine: one clock); those counts are logged, not asserted — a
// stalled process shifts admissions from one period into the next, and
// only their sum is exact.
func TestRateLimitAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	const (
		n       = 100
		period  = 200 * time.Millisecond
		periods = 30
		procs   = 3
		offer   = 5 * n / procs // per process per period: 5× overload together
	)
	interval := period / n
	for _, control := range []bool{false, true} {
		name := "shared"
		if control {
			name = "control"
		}
		t.Run(name, func(t *testing.T) {
			children := make([]*faults.Child, procs)
			for i := range children {
				e := childEnv{addr: srv.Addr(), key: "rate-" + name}
				if control {
					e.prefix = fmt.Sprintf("proc%d:", i)
				}
				children[i] = faults.StartChild(t, "rater", append(e.env(),
					envRateN+"="+strconv.Itoa(n), envRatePeriod+"="+period.String(),
					envRatePeriods+"="+strconv.Itoa(periods), envRateOffer+"="+strconv.Itoa(offer))...)
			}
			for _, ch := range children {
				ch.Expect("READY", 30*time.Second)
			}
			start := time.Now().Add(200 * time.Millisecond) // every process starts its load then
			for _, ch := range children {
				ch.Send("go " + strconv.FormatInt(start.UnixMicro(), 10))
			}
			var admitted, offered int64
			first, last := int64(math.MaxInt64), int64(0)
			perPeriod := make([]int64, periods)
			for i, ch := range children {
				var a, o, errs, f, l int64
				res := ch.Expect("RESULT", time.Minute)
				if _, err := fmt.Sscan(res, &a, &o, &errs, &f, &l); err != nil || errs != 0 {
					t.Fatalf("child %d: RESULT %q (%v); stderr: %s", i, res, err, ch.Stderr())
				}
				for j, c := range strings.Fields(ch.Expect("PERIODS", 10*time.Second)) {
					v, _ := strconv.ParseInt(c, 10, 64)
					perPeriod[j] += v
				}
				admitted, offered = admitted+a, offered+o
				first, last = min(first, f), max(last, l)
			}
			span := time.Duration(last-first) * time.Microsecond
			spanPeriods := float64(span) / float64(period)
			// The first admissions are a burst of N (a full bucket); after
			// it, one per interval, however many ask.
			bursts := 1
			if control {
				bursts = procs
			}
			perPeriodAvg := float64(admitted-int64(bursts*n)) / spanPeriods
			t.Logf("%s: %d admitted of %d offered over %v (%.1f periods by the server's clock): %.1f per period after the burst (limit %d), offered %.1f×; per period by the wall clock: %v",
				name, admitted, offered, span, spanPeriods, perPeriodAvg, n, float64(offered)/spanPeriods/n, perPeriod)
			if float64(offered)/spanPeriods < 4*n {
				t.Fatalf("offered %.1f per period: not the overload the test needs (want about 5×%d)", float64(offered)/spanPeriods, n)
			}
			if control {
				if perPeriodAvg < 2.5*n {
					t.Fatalf("control: a limiter per process admitted %.1f per period; want about %d×%d, or the count cannot catch a limit that is not shared", perPeriodAvg, procs, n)
				}
				return
			}
			// Exact: the admissions over the span are burst + span/interval
			// (± a slot at each end); 1% of N per period leaves room for
			// that and nothing else.
			if math.Abs(perPeriodAvg-n) > 0.01*n {
				t.Fatalf("admitted %.2f per period, want %d ± 1%%", perPeriodAvg, n)
			}
			if max := int64(n) + int64(span/interval) + 1; admitted > max {
				t.Fatalf("admitted %d over %v, more than a limit can: burst %d + span / interval %v + 1 = %d", admitted, span, n, interval, max)
			}
		})
	}
}

// childRater runs one process's share of TestRateLimitAcrossProcesses:
// after "READY", on "go <start, unix µs>", 8 workers offer LT_RATE_OFFER
// requests per period together, from start for LT_RATE_PERIODS periods,
// each an Allow on LT_KEY (LT_RATE_N per LT_RATE_PERIOD). It prints
//
//	RESULT admitted offered errors first last
//
// (first and last: the Redis server's clock in µs, read just before the
// load starts and just after it ends), "PERIODS c0 c1 ..." (admissions per
// period by the wall clock) and "DONE".
func childRater() {
	e := readChildEnv()
	lk := e.locker()
	n, _ := strconv.Atoi(os.Getenv(envRateN))
	period, _ := time.ParseDuration(os.Getenv(envRatePeriod))
	periods, _ := strconv.Atoi(os.Getenv(envRatePeriods))
	offer, _ := strconv.Atoi(os.Getenv(envRateOffer))
	p := locker.RateParams{Limit: n, Period: period}
	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", e.addr) }}
	serverNow := func() int64 {
		c := pool.Get()
		defer c.Close()
		v, err := redis.Int64s(c.Do("TIME"))
		if err != nil {
			say("ERR TIME: %v", err)
			return 0
		}
		return v[0]*1_000_000 + v[1]
	}
	say("READY")
	sc := bufio.NewScanner(os.Stdin)
	var us int64
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "go "); ok {
			us, _ = strconv.ParseInt(rest, 10, 64)
			break
		}
	}
	start := time.UnixMicro(us)
	end := start.Add(time.Duration(periods) * period)
	time.Sleep(time.Until(start)) // pacing the load, not waiting for an event
	first := serverNow()
	const workers = 8
	every := period * workers / time.Duration(offer)
	counts := make([]atomic.Int64, periods)
	var admitted, offered, errs atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			tick := time.NewTicker(every)
			defer tick.Stop()
			for now := range tick.C {
				if !now.Before(end) {
					return
				}
				offered.Add(1)
				_, err := lk.Allow(context.Background(), e.key, p)
				switch {
				case err == nil:
					admitted.Add(1)
					if i := int(time.Since(start) / period); i >= 0 && i < periods {
						counts[i].Add(1)
					}
				case !errors.Is(err, locker.ErrRateLimited):
					if errs.Add(1) <= 3 {
						say("ERR %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	last := serverNow()
	say("RESULT %d %d %d %d %d", admitted.Load(), offered.Load(), errs.Load(), first, last)
	per := make([]string, periods)
	for i := range counts {
		per[i] = strconv.FormatInt(counts[i].Load(), 10)
	}
	say("PERIODS %s", strings.Join(per, " "))
	say("DONE")
}
