package locker_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
)

// serverMicros is the server's clock in microseconds.
func serverMicros(t *testing.T, srv *redistest.Server) int64 {
	t.Helper()
	v, err := redis.Int64s(srv.Do("TIME"))
	if err != nil {
		t.Fatal(err)
	}
	return v[0]*1_000_000 + v[1]
}

// setBucket writes a rate key's state as rate.lua keeps it: the last
// admission ago before the server's now, with debt left then.
func setBucket(t *testing.T, srv *redistest.Server, key string, ago, debt time.Duration, p locker.RateParams) {
	t.Helper()
	iv := float64(p.Period) / float64(p.Limit) / 1e3
	burst := p.Burst
	if burst == 0 {
		burst = p.Limit
	}
	v := fmt.Sprintf("%d %d %s %d", serverMicros(t, srv)-ago.Microseconds(), debt.Microseconds(), strconv.FormatFloat(iv, 'g', -1, 64), burst)
	if _, err := srv.Do("SET", "locktag:{"+key+"}:rate", v, "PX", 3600_000); err != nil {
		t.Fatal(err)
	}
}

// near fails unless got is within [want-slack, want]: a time the server
// computed, less what passed between the test's calls.
func near(t *testing.T, what string, got, want, slack time.Duration) {
	t.Helper()
	if got > want || got < want-slack {
		t.Fatalf("%s %v, want %v (less at most %v)", what, got, want, slack)
	}
}

// A full bucket admits its burst at once, counting down, then refuses
// with the exact time to the next slot; a refusal writes nothing, and the
// key expires when the bucket would be full again.
func TestRateBurstThenRefused(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	p := locker.RateParams{Limit: 3, Period: time.Hour} // one request per 20 minutes, bursts of 3
	const slack = 2 * time.Second                       // a loaded machine between calls
	for i, rem := range []int{2, 1, 0} {
		d, err := lk.Allow(t.Context(), "r:burst", p)
		if err != nil || d.Remaining != rem || d.RetryAfter != 0 || d.Waited != 0 {
			t.Fatalf("request %d: %+v, %v; want admitted with %d remaining", i, d, err, rem)
		}
		near(t, "reset", d.Reset, time.Duration(i+1)*20*time.Minute, slack)
	}
	before, _ := redis.String(srv.Do("GET", "locktag:{r:burst}:rate"))
	d, err := lk.Allow(t.Context(), "r:burst", p)
	if !errors.Is(err, locker.ErrRateLimited) || d.Remaining != 0 {
		t.Fatalf("fourth: %+v, %v; want ErrRateLimited", d, err)
	}
	near(t, "retry after", d.RetryAfter, 20*time.Minute, slack)
	near(t, "reset", d.Reset, time.Hour, slack)
	if after, _ := redis.String(srv.Do("GET", "locktag:{r:burst}:rate")); after != before {
		t.Fatalf("a refusal wrote %q over %q", after, before)
	}
	pttl := time.Duration(intReply(t, srv, "PTTL", "locktag:{r:burst}:rate")) * time.Millisecond
	near(t, "key TTL", pttl, time.Hour, slack)
	st, ok, err := lk.InspectRate(t.Context(), "r:burst")
	if err != nil || !ok || st.Remaining != 0 || st.Burst != 3 || st.Interval != 20*time.Minute {
		t.Fatalf("InspectRate: %+v %v %v", st, ok, err)
	}
	near(t, "inspected reset", st.Reset, time.Hour, slack)
}

// Refill is exact: a bucket emptied 30 minutes ago at one request per 20
// minutes has 1 request back (and 10 minutes towards the next); after it,
// the next comes exactly 10 minutes later. The state is written as the
// script keeps it, so no test waits for time to pass.
func TestRateRefill(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	p := locker.RateParams{Limit: 3, Period: time.Hour}
	const slack = 2 * time.Second
	setBucket(t, srv, "r:refill", 30*time.Minute, time.Hour, p) // empty then: debt = burst × interval
	st, ok, err := lk.InspectRate(t.Context(), "r:refill")
	if err != nil || !ok || st.Remaining != 1 {
		t.Fatalf("InspectRate: %+v %v %v; want 1 remaining", st, ok, err)
	}
	near(t, "inspected reset", st.Reset, 30*time.Minute, slack)
	d, err := lk.Allow(t.Context(), "r:refill", p)
	if err != nil || d.Remaining != 0 {
		t.Fatalf("refilled request: %+v, %v", d, err)
	}
	near(t, "reset", d.Reset, 50*time.Minute, slack)
	d, err = lk.Allow(t.Context(), "r:refill", p)
	if !errors.Is(err, locker.ErrRateLimited) {
		t.Fatalf("next: %+v, %v; want ErrRateLimited", d, err)
	}
	near(t, "retry after", d.RetryAfter, 10*time.Minute, slack)

	// A bucket idle for longer than it takes to refill is full again: the
	// whole burst, and no more.
	setBucket(t, srv, "r:idle", 5*time.Hour, time.Hour, p)
	for i := range 3 {
		if _, err := lk.Allow(t.Context(), "r:idle", p); err != nil {
			t.Fatalf("idle bucket, request %d: %v", i, err)
		}
	}
	if _, err := lk.Allow(t.Context(), "r:idle", p); !errors.Is(err, locker.ErrRateLimited) {
		t.Fatalf("idle bucket, request 4: %v; want ErrRateLimited", err)
	}

	// A server clock that went back adds no debt: the last admission "in
	// the future" counts as now.
	setBucket(t, srv, "r:clock", -10*time.Minute, 40*time.Minute, p)
	d, err = lk.Allow(t.Context(), "r:clock", p)
	if err != nil || d.Remaining != 0 {
		t.Fatalf("after the clock went back: %+v, %v; want admitted, none remaining", d, err)
	}
	near(t, "reset", d.Reset, time.Hour, slack)
}

// Burst sizes the bucket apart from the rate: 5 at once at one per hour.
func TestRateBurst(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	p := locker.RateParams{Limit: 1, Period: time.Hour, Burst: 5}
	for i := range 5 {
		if d, err := lk.Allow(t.Context(), "r:b", p); err != nil || d.Remaining != 4-i {
			t.Fatalf("request %d: %+v, %v", i, d, err)
		}
	}
	d, err := lk.Allow(t.Context(), "r:b", p)
	if !errors.Is(err, locker.ErrRateLimited) {
		t.Fatalf("sixth: %v", err)
	}
	near(t, "retry after", d.RetryAfter, time.Hour, 2*time.Second)
}

// With Wait, a request whose slot comes within the wait reserves it and
// is admitted when it comes (the server says how long: no polling); one
// whose slot lies beyond the wait or its deadline is refused at once,
// without a reservation; one cancelled while it waits keeps its slot
// from others.
func TestRateWait(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	p := locker.RateParams{Limit: 1, Period: 100 * time.Millisecond, Burst: 1, Wait: time.Second}
	if _, err := lk.Allow(t.Context(), "r:w", p); err != nil {
		t.Fatal(err)
	}
	d, err := lk.Allow(t.Context(), "r:w", p)
	if err != nil || d.Waited <= 0 || d.Waited > 100*time.Millisecond || d.Remaining != 0 {
		t.Fatalf("second: %+v, %v; want admitted after waiting for its slot, at most 100ms", d, err)
	}

	slow := locker.RateParams{Limit: 1, Period: time.Hour, Burst: 1, Wait: 2 * time.Hour}
	if _, err := lk.Allow(t.Context(), "r:slow", slow); err != nil {
		t.Fatal(err)
	}
	// The slot is an hour away: beyond a wait of a minute, and beyond a
	// deadline a second away.
	short := slow
	short.Wait = time.Minute
	if d, err := lk.Allow(t.Context(), "r:slow", short); !errors.Is(err, locker.ErrRateLimited) || d.RetryAfter < 59*time.Minute {
		t.Fatalf("slot beyond the wait: %+v, %v", d, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	if _, err := lk.Allow(ctx, "r:slow", slow); !errors.Is(err, locker.ErrRateLimited) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slot beyond the deadline: %v; want ErrRateLimited at once", err)
	}
	cancel()

	// Reserve the slot an hour away, then cancel the wait.
	before, _ := redis.String(srv.Do("GET", "locktag:{r:slow}:rate"))
	ctx, cancel = context.WithCancel(t.Context())
	res := make(chan error, 1)
	go func() { _, err := lk.Allow(ctx, "r:slow", slow); res <- err }()
	eventually(t, testwait.Timeout, "the slot reserved", func() bool {
		v, _ := redis.String(srv.Do("GET", "locktag:{r:slow}:rate"))
		return v != before
	})
	cancel()
	if err := testwait.Recv(t, res, "the cancelled wait"); !errors.Is(err, locker.ErrRateLimited) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v; want ErrRateLimited and context.Canceled", err)
	}
	short.Wait = 0
	if d, err := lk.Allow(t.Context(), "r:slow", short); !errors.Is(err, locker.ErrRateLimited) || d.RetryAfter < 119*time.Minute {
		t.Fatalf("after the abandoned reservation: %+v, %v; want the next slot two intervals away", d, err)
	}
}

// Under concurrency across Lockers the limit is exact: 200 requests on
// a bucket of 20 (refilling once an hour) admit exactly 20. The control
// breaks the limiter — each goroutine's Locker has a key prefix of its
// own, so each has its own bucket — and the count catches it.
func TestRateConcurrentExact(t *testing.T) {
	srv := redistest.Start(t)
	p := locker.RateParams{Limit: 1, Period: time.Hour, Burst: 20}
	run := func(lockers []*locker.Locker) int64 {
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for i := range 50 {
			lk := lockers[i%len(lockers)]
			wg.Go(func() {
				for range 4 {
					_, err := lk.Allow(t.Context(), "r:conc", p)
					switch {
					case err == nil:
						admitted.Add(1)
					case !errors.Is(err, locker.ErrRateLimited):
						t.Errorf("Allow: %v", err)
					}
				}
			})
		}
		wg.Wait()
		return admitted.Load()
	}
	shared := []*locker.Locker{newLocker(t, srv), newLocker(t, srv), newLocker(t, srv)}
	if n := run(shared); n != 20 {
		t.Fatalf("admitted %d, want exactly the burst, 20", n)
	}
	broken := make([]*locker.Locker, 50)
	for i := range broken {
		broken[i] = newLocker(t, srv, locker.WithKeyPrefix(fmt.Sprintf("broken%d:", i)))
	}
	if n := run(broken); n <= 20 {
		t.Fatalf("control: a limiter per goroutine admitted %d; the count cannot catch a broken limit", n)
	}
}

// A bucket's key is gone once the bucket is full again: nothing is left
// behind, and InspectRate finds nothing.
func TestRateKeyExpires(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	p := locker.RateParams{Limit: 2, Period: 100 * time.Millisecond}
	for range 2 {
		if _, err := lk.Allow(t.Context(), "r:exp", p); err != nil {
			t.Fatal(err)
		}
	}
	if pttl := intReply(t, srv, "PTTL", "locktag:{r:exp}:rate"); pttl <= 0 || pttl > 100 {
		t.Fatalf("PTTL %d ms, want the refill time, at most 100", pttl)
	}
	eventually(t, testwait.Timeout, "the full bucket's key to expire", func() bool {
		return intReply(t, srv, "EXISTS", "locktag:{r:exp}:rate") == 0
	})
	if _, ok, err := lk.InspectRate(t.Context(), "r:exp"); ok || err != nil {
		t.Fatalf("InspectRate of a full bucket: ok %v, %v", ok, err)
	}
	if n := intReply(t, srv, "DBSIZE"); n != 0 {
		t.Fatalf("%d keys left", n)
	}
}

func TestRateBadParams(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	for _, p := range []locker.RateParams{
		{Limit: 0, Period: time.Second},
		{Limit: 1, Period: 0},
		{Limit: 1, Period: 500 * time.Microsecond},
		{Limit: 2_000_000, Period: time.Second},
		{Limit: 1, Period: time.Second, Burst: -1},
		{Limit: 1, Period: time.Second, Wait: -time.Second},
		{Limit: 1, Period: 24 * time.Hour, Burst: 10000},
	} {
		if err := lk.SupportsRate(p); !errors.Is(err, locker.ErrBadRate) {
			t.Errorf("SupportsRate(%+v): %v, want ErrBadRate", p, err)
		}
		if _, err := lk.Allow(t.Context(), "r:bad", p); !errors.Is(err, locker.ErrBadRate) {
			t.Errorf("Allow(%+v): %v, want ErrBadRate", p, err)
		}
	}
	if _, err := lk.Allow(t.Context(), "", locker.RateParams{Limit: 1, Period: time.Second}); !errors.Is(err, locker.ErrEmptyKey) {
		t.Errorf("empty key: %v", err)
	}
	if n := intReply(t, srv, "DBSIZE"); n != 0 {
		t.Fatalf("%d keys written", n)
	}
}

// Redis down: ErrUnavailable, not a refusal.
func TestRateUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	lk := newLocker(t, srv)
	srv.Stop()
	_, err := lk.Allow(t.Context(), "r:down", locker.RateParams{Limit: 1, Period: time.Second})
	if !errors.Is(err, locker.ErrUnavailable) || errors.Is(err, locker.ErrRateLimited) {
		t.Fatalf("%v, want ErrUnavailable", err)
	}
}

// A Redlock Locker refuses rate limits: SupportsRate and Allow name the
// reason, and no master is touched.
func TestRateRedlockRefused(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	lk := newRedlock(t, srvs)
	p := locker.RateParams{Limit: 10, Period: time.Second}
	for _, err := range []error{lk.SupportsRate(p), func() error { _, err := lk.Allow(t.Context(), "r:q", p); return err }()} {
		if !errors.Is(err, locker.ErrKindUnsupported) {
			t.Fatalf("%v, want ErrKindUnsupported", err)
		}
	}
	if _, _, err := lk.InspectRate(t.Context(), "r:q"); !errors.Is(err, locker.ErrKindUnsupported) {
		t.Fatalf("InspectRate: %v", err)
	}
	for i, s := range srvs {
		if n, _ := redis.Int64(s.Do("DBSIZE")); n != 0 {
			t.Fatalf("master %d has %d keys", i, n)
		}
	}
}
