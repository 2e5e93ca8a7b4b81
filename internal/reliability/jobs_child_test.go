package reliability

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/locker/job"
)

// tickerEnv is what a ticker child reads from its environment, beside
// childEnv's address and key (the job's name).
type tickerEnv struct {
	ticks   int
	period  time.Duration
	skew    time.Duration // this scheduler's clock is behind by skew
	atLeast time.Duration // job.WithAtLeast; 0: none
	guarded bool          // false: run the work without the job's lock
}

func (e tickerEnv) env() []string {
	return []string{
		"LT_TICKS=" + strconv.Itoa(e.ticks), "LT_PERIOD=" + e.period.String(), "LT_SKEW=" + e.skew.String(),
		"LT_AT_LEAST=" + e.atLeast.String(), "LT_GUARDED=" + strconv.FormatBool(e.guarded),
	}
}

func readTickerEnv() tickerEnv {
	dur := func(k string) time.Duration { d, _ := time.ParseDuration(os.Getenv(k)); return d }
	n, _ := strconv.Atoi(os.Getenv("LT_TICKS"))
	g, _ := strconv.ParseBool(os.Getenv("LT_GUARDED"))
	return tickerEnv{ticks: n, period: dur("LT_PERIOD"), skew: dur("LT_SKEW"), atLeast: dur("LT_AT_LEAST"), guarded: g}
}

// tickRecorder records a job's runs in Redis: HINCRBY key:runs tick 1, the
// ticks skipped as too late (late), and an overlap detector (key:active counts runs under way, key:overlaps the
// runs that found another one under way).
type tickRecorder struct {
	pool *redis.Pool
	key  string
}

func (r tickRecorder) run(tick int) error {
	c := r.pool.Get()
	defer c.Close()
	n, err := redis.Int(c.Do("INCR", r.key+":active"))
	if err != nil {
		return err
	}
	if n > 1 {
		_, _ = c.Do("INCR", r.key+":overlaps")
	}
	time.Sleep(5 * time.Millisecond) // the job's work
	if _, err := c.Do("HINCRBY", r.key+":runs", tick, 1); err != nil {
		return err
	}
	_, err = c.Do("DECR", r.key+":active")
	return err
}

// late records that this process took tick's lock too late and skipped it
// (HINCRBY key:late tick 1).
func (r tickRecorder) late(tick int) {
	c := r.pool.Get()
	defer c.Close()
	_, _ = c.Do("HINCRBY", r.key+":late", tick, 1)
}

// childTicker schedules the job LT_KEY every LT_PERIOD, LT_TICKS times,
// with its clock LT_SKEW behind, and runs each tick through job.RunAt (or,
// unguarded, directly). It prints "READY" once connected, waits for
// "START <unix ms>" on stdin (tick 0's time), and prints "DONE ran N
// skipped N late N failed N" at the end.
func childTicker() {
	e, te := readChildEnv(), readTickerEnv()
	lk := e.locker()
	ctx := context.Background()
	if err := lk.Ping(ctx); err != nil {
		say("FAILED %v", err)
		return
	}
	var opts []job.Option
	if te.atLeast > 0 {
		opts = append(opts, job.WithAtLeast(te.atLeast))
	}
	j, err := job.New(lk, e.key, opts...)
	if err != nil {
		say("FAILED %v", err)
		return
	}
	rec := tickRecorder{key: e.key, pool: &redis.Pool{MaxIdle: 4, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", e.addr) }}}
	say("READY")
	sc := bufio.NewScanner(os.Stdin)
	var start time.Time
	for sc.Scan() {
		if ms, ok := strings.CutPrefix(sc.Text(), "START "); ok {
			n, _ := strconv.ParseInt(ms, 10, 64)
			start = time.UnixMilli(n)
			break
		}
	}
	var ran, skipped, late, failed int
	for i := range te.ticks {
		at := start.Add(time.Duration(i)*te.period + te.skew) // tick i on this scheduler's clock
		time.Sleep(time.Until(at))
		if !te.guarded {
			if err := rec.run(i); err != nil {
				failed++
				say("ERR tick %d: %v", i, err)
				continue
			}
			ran++
			continue
		}
		err := j.RunAt(ctx, at, func(context.Context, int64) error { return rec.run(i) })
		switch {
		case err == nil:
			ran++
		case errors.Is(err, job.ErrMisfired):
			late++
			rec.late(i)
		case errors.Is(err, job.ErrSkipped):
			skipped++
		default:
			failed++
			say("ERR tick %d: %v", i, err)
		}
	}
	say("DONE ran %d skipped %d late %d failed %d", ran, skipped, late, failed)
}

// childCandidate campaigns for leadership of LT_KEY until its stdin closes
// or says "quit". Each term prints "LEADER token", claims the fenced store
// at LT_STORE (if any) and prints "READ value", and prints "LOST cause"
// when the term's context ends. On "write" it writes value+1 with the last
// term's token, without looking at the term's context (a careless leader),
// and prints "WROTE ok|stale|error".
func childCandidate() {
	e := readChildEnv()
	lk := e.locker()
	el, err := job.NewElector(lk, e.key, job.WithRetryDelay(50*time.Millisecond))
	if err != nil {
		say("FAILED %v", err)
		return
	}
	st := newRemoteStore(e.store)
	var mu sync.Mutex
	var token, read int64 // the last term's
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = el.Run(ctx, func(lctx context.Context, t job.Term) error {
			say("LEADER %d", t.Token())
			var v int64
			if e.store != "" {
				var err error
				if v, err = st.Read(lctx, e.key, t.Token()); err != nil {
					say("FAILED read: %v", err)
				}
			}
			mu.Lock()
			token, read = t.Token(), v
			mu.Unlock()
			say("READ %d", v)
			<-lctx.Done()
			say("LOST %v", context.Cause(lctx))
			return nil
		})
	}()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() && sc.Text() != "quit" {
		if sc.Text() != "write" {
			continue
		}
		mu.Lock()
		tok, v := token, read
		mu.Unlock()
		switch err := st.Write(context.Background(), e.key, tok, v, v+1); {
		case err == nil:
			say("WROTE ok")
		case errors.Is(err, errStale):
			say("WROTE stale")
		default:
			say("WROTE error %v", err)
		}
	}
	cancel()
	<-done
}
