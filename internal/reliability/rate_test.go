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
	envRateBurst   = "LT_RATE_BURST"   // the bucket's size
)

// TestRateLimitAcrossProcesses: 3 processes share one key limited to N
// requests per period and together offer 5×N per period for 30 periods.
// The key admits N per period, ± 1%: counted against the Redis server's
// own clock, the clock the limit runs on. The test empties the bucket,
// reads the server's clock, lets the processes loose, reads the clock
// again and what is left in the bucket; a limit that is exact admitted
// every slot of the span but those left, and not one more. The bucket
// holds a second's worth of slots (burst 5×N), so a stall of every
// process on a loaded machine leaves slots in the bucket, where they are
// counted, instead of losing them.
//
// The control gives each process a limiter of its own (a key prefix
// each): the same load then admits about 3×N per period, so the count
// catches a limit that is not shared.
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
		burst   = 5 * n         // a second of slots
	)
	p := locker.RateParams{Limit: n, Period: period, Burst: burst}
	interval := period / n
	ctx := context.Background()
	for _, control := range []bool{false, true} {
		name := "shared"
		if control {
			name = "control"
		}
		t.Run(name, func(t *testing.T) {
			key := "rate-" + name
			children := make([]*faults.Child, procs)
			var buckets []*locker.Locker // the parent's view of each bucket
			for i := range children {
				e := childEnv{addr: srv.Addr(), key: key, call: 10 * time.Second}
				if control || i == 0 {
					if control {
						e.prefix = fmt.Sprintf("proc%d:", i)
					}
					var opts []locker.Option
					if e.prefix != "" {
						opts = append(opts, locker.WithKeyPrefix(e.prefix))
					}
					buckets = append(buckets, newLocker(t, srv.Pool(t), opts...))
				}
				children[i] = faults.StartChild(t, "rater", append(e.env(),
					envRateN+"="+strconv.Itoa(n), envRatePeriod+"="+period.String(),
					envRatePeriods+"="+strconv.Itoa(periods), envRateOffer+"="+strconv.Itoa(offer), envRateBurst+"="+strconv.Itoa(burst))...)
			}
			for _, ch := range children {
				ch.Expect("READY", 30*time.Second)
			}
			// Empty every bucket (until one pass finds them all empty),
			// then read the clock: from here on every slot is admitted or
			// left in a bucket.
			for empty := false; !empty; {
				empty = true
				for _, lk := range buckets {
					_, err := lk.Allow(ctx, key, p)
					switch {
					case err == nil:
						empty = false
					case !errors.Is(err, locker.ErrRateLimited):
						t.Fatal(err)
					}
				}
			}
			t0 := serverMicros(t, srv)
			start := time.Now().Add(100 * time.Millisecond) // every process starts its load then
			for _, ch := range children {
				ch.Send("go " + strconv.FormatInt(start.UnixMicro(), 10))
			}
			var admitted, offered int64
			perPeriod := make([]int64, periods)
			for i, ch := range children {
				var a, o, errs int64
				res := ch.Expect("RESULT", time.Minute)
				if _, err := fmt.Sscan(res, &a, &o, &errs); err != nil || errs != 0 {
					t.Fatalf("child %d: RESULT %q (%v); stderr: %s", i, res, err, ch.Stderr())
				}
				for j, c := range strings.Fields(ch.Expect("PERIODS", 10*time.Second)) {
					v, _ := strconv.ParseInt(c, 10, 64)
					perPeriod[j] += v
				}
				admitted, offered = admitted+a, offered+o
			}
			t1 := serverMicros(t, srv)
			var left int64
			for _, lk := range buckets {
				st, ok, err := lk.InspectRate(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					t.Fatalf("a bucket filled up: the load stalled for more than a second, so slots were lost and the count proves nothing")
				}
				left += int64(st.Remaining)
			}
			span := time.Duration(t1-t0) * time.Microsecond
			spanPeriods := float64(span) / float64(period)
			slots := int64(len(buckets)) * int64(span/interval) // what the rate gave out over the span
			perPeriodAvg := float64(admitted) / spanPeriods
			t.Logf("%s: %d admitted of %d offered over %v (%.1f periods by the server's clock), %d slots, %d left: %.1f per period (limit %d), offered %.1f×; per period by the wall clock: %v",
				name, admitted, offered, span, spanPeriods, slots, left, perPeriodAvg, n, float64(offered)/spanPeriods/n, perPeriod)
			if float64(offered)/spanPeriods < 3*n {
				t.Fatalf("offered %.1f per period: not the overload the test needs (want about 5×%d)", float64(offered)/spanPeriods, n)
			}
			if control {
				if perPeriodAvg < 2.5*n {
					t.Fatalf("control: a limiter per process admitted %.1f per period; want about %d×%d, or the count cannot catch a limit that is not shared", perPeriodAvg, procs, n)
				}
				return
			}
			// Exact: every slot of the span admitted but those left (± a
			// slot at each end), and never more than the span's slots;
			// 1% of N per period leaves room for the ends and nothing else.
			if dev := float64(admitted-(slots-left)) / spanPeriods; math.Abs(dev) > 0.01*n {
				t.Fatalf("admitted %d of %d slots with %d left: %+.2f per period, want within ± 1%% of %d", admitted, slots, left, dev, n)
			}
			if admitted > slots+1 {
				t.Fatalf("admitted %d over %v: more than the %d slots of the rate", admitted, span, slots)
			}
		})
	}
}

// childRater runs one process's share of TestRateLimitAcrossProcesses:
// after "READY", on "go <start, unix µs>", 16 workers offer LT_RATE_OFFER
// requests per period together, from start for LT_RATE_PERIODS periods,
// each an Allow on LT_KEY (LT_RATE_N per LT_RATE_PERIOD, bursts of
// LT_RATE_BURST). It prints
//
//	RESULT admitted offered errors
//
// then "PERIODS c0 c1 ..." (admissions per period by the wall clock) and
// "DONE".
func childRater() {
	e := readChildEnv()
	lk := e.locker()
	n, _ := strconv.Atoi(os.Getenv(envRateN))
	period, _ := time.ParseDuration(os.Getenv(envRatePeriod))
	periods, _ := strconv.Atoi(os.Getenv(envRatePeriods))
	offer, _ := strconv.Atoi(os.Getenv(envRateOffer))
	burst, _ := strconv.Atoi(os.Getenv(envRateBurst))
	p := locker.RateParams{Limit: n, Period: period, Burst: burst}
	// Dial, and load the script, before the load: a first call that is
	// slow would leave the full bucket unused at the start of the span.
	if _, err := lk.Allow(context.Background(), e.key+":warm-up", p); err != nil {
		say("ERR warm-up: %v", err)
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
	// Request k is due at start + k × period / offer. Workers send each
	// when it is due, or at once when they are behind (after a stall of
	// this process): the offered load catches up instead of dropping.
	start := time.UnixMicro(us)
	planned := int64(offer * periods)
	time.Sleep(time.Until(start)) // pacing the load, not waiting for an event
	const workers = 16
	counts := make([]atomic.Int64, periods)
	var next, admitted, errs atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				k := next.Add(1) - 1
				if k >= planned {
					return
				}
				time.Sleep(time.Until(start.Add(time.Duration(k) * period / time.Duration(offer))))
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
	say("RESULT %d %d %d", admitted.Load(), planned, errs.Load())
	per := make([]string, periods)
	for i := range counts {
		per[i] = strconv.FormatInt(counts[i].Load(), 10)
	}
	say("PERIODS %s", strings.Join(per, " "))
	say("DONE")
}

// serverMicros is the Redis server's clock in microseconds.
func serverMicros(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	v, err := redis.Int64s(srv.Do("TIME"))
	if err != nil {
		t.Fatal(err)
	}
	return v[0]*1_000_000 + v[1]
}
