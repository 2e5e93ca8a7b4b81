// Command worker is one process of the mixed-version test
// (internal/reliability/mixed): it runs one lock kind against one Redis
// with several goroutines from -start to -until (wall-clock ms), checks
// every critical section with an exact occupancy detector on a
// connection of its own, and prints one JSON line of counts.
//
// It uses only API that every release since v0.10.0 has, so that the same
// source builds against an older release's checkout (.ci/mixed.sh copies
// it into that checkout's locker/goredis module, which requires go-redis
// and replaces the core with the checkout's) and against HEAD. With
// -cluster the locker runs on a Redis Cluster through go-redis.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	goredisclient "github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/goredis"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/job"
	"github.com/locktag/locktag/locker/redigo"
)

// Result is what a worker prints.
type Result struct {
	ID         string `json:"id"`
	Ops        int64  `json:"ops"`      // critical sections run (or rate admissions, idempotent executions)
	Busy       int64  `json:"busy"`     // not obtained within the wait (or rate refusals, replays)
	Overlaps   int64  `json:"overlaps"` // critical sections the detector saw shared beyond the kind's limit
	Stale      int64  `json:"stale"`    // mutex fencing tokens not above every earlier one
	Errors     int64  `json:"errors"`   // any other error
	FirstError string `json:"first_error,omitempty"`
}

// enter raises KEYS[1] and returns it with KEYS[2]'s count: the detector's
// one atomic step (a writer raises its count and reads the readers', a
// reader the other way round).
var enter = redis.NewScript(2, `local a = redis.call('INCR', KEYS[1])
return {a, tonumber(redis.call('GET', KEYS[2]) or '0')}`)

// fenced records a mutex holder's fencing token ARGV[1] in KEYS[1] and
// returns 1 when it was not above the last one recorded.
var fenced = redis.NewScript(1, `local last = redis.call('GET', KEYS[1])
if last and tonumber(last) >= tonumber(ARGV[1]) then return 1 end
redis.call('SET', KEYS[1], ARGV[1])
return 0`)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "Redis address")
	kind := flag.String("kind", "mutex", "mutex (with fences and keep), job, sem, rw, multi, idem, rate, or nolock (the detector's control)")
	id := flag.String("id", "w", "this worker's name")
	gs := flag.Int("g", 8, "goroutines")
	start := flag.Int64("start", 0, "wall-clock ms to start at")
	until := flag.Int64("until", 0, "wall-clock ms to stop at")
	rate := flag.Int("rate", 500, "the rate kind's limit per second")
	cluster := flag.String("cluster", "", "a Redis Cluster's addresses, comma-separated: the locker runs on go-redis's cluster client; the detector stays on -addr, which must serve the {occ} slot")
	flag.Parse()

	var drv driver.Driver
	if *cluster != "" {
		drv = goredis.New(goredisclient.NewClusterClient(&goredisclient.ClusterOptions{Addrs: strings.Split(*cluster, ","), PoolSize: *gs + 2}))
	} else {
		drv = redigo.New(&redis.Pool{MaxIdle: *gs + 2, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", *addr) }})
	}
	lk, err := locker.New(drv)
	if err != nil {
		fail(err)
	}
	defer lk.Close()
	// The detector's keys share the hash tag {occ}: on a Cluster they are
	// all on the node -addr names.
	det := &redis.Pool{MaxIdle: *gs + 2, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", *addr) }}

	res := Result{ID: *id}
	var mu sync.Mutex
	end := time.UnixMilli(*until)
	note := func(err error) {
		if !time.Now().Before(end) && *kind != "rate" {
			return // a call the run's end cut short
		}
		mu.Lock()
		defer mu.Unlock()
		res.Errors++
		if res.FirstError == "" {
			res.FirstError = err.Error()
		}
	}
	var ops, busy, overlaps, stale atomic.Int64
	// section runs one critical section under the detector: counter is
	// raised (others read) and must stay within max, others at zero.
	section := func(counter, others string, max int64) {
		c := det.Get()
		defer c.Close()
		v, err := redis.Int64s(enter.Do(c, counter, others))
		if err != nil {
			note(err)
			return
		}
		if v[0] > max || v[1] > 0 {
			overlaps.Add(1)
		}
		time.Sleep(200 * time.Microsecond) // the work; not synchronisation
		if _, err := c.Do("DECR", counter); err != nil {
			note(err)
		}
		ops.Add(1)
	}
	// lock runs a section under key's lock; a mutex (fence) also checks
	// its fencing token and, every keep-th time, keeps the lock a moment
	// after its release (Lease.ReleaseAfter).
	lock := func(ctx context.Context, key string, p locker.Params, counter, others string, max int64, fence bool, keep bool) {
		le, err := lk.Obtain(ctx, key, p)
		if errors.Is(err, locker.ErrNotObtained) {
			busy.Add(1)
			return
		}
		if err != nil {
			note(err)
			return
		}
		if fence {
			c := det.Get()
			n, err := redis.Int(fenced.Do(c, "{occ}:fence:"+key, le.Token()))
			c.Close()
			if err != nil {
				note(err)
			}
			stale.Add(int64(n))
		}
		section(counter, others, max)
		if keep {
			err = le.ReleaseAfter(context.Background(), 2*time.Millisecond)
		} else {
			err = le.Release(context.Background())
		}
		if err != nil {
			note(err)
		}
	}

	jb, err := job.New(lk, "mixed:job", job.WithWait(2*time.Second))
	if err != nil {
		fail(err)
	}
	httpGuard, err := guard.NewIdempotency[struct{}](lk, "H1", guard.WithPublicScope(), guard.WithReplayWait(2*time.Second))
	if err != nil {
		fail(err)
	}

	time.Sleep(time.Until(time.UnixMilli(*start)))
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	var wg sync.WaitGroup
	for g := range *gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := locker.Params{TTL: 2 * time.Second, Wait: 2 * time.Second}
			for i := 0; ctx.Err() == nil && time.Now().Before(end); i++ {
				switch *kind {
				case "mutex":
					lock(ctx, "mixed:mutex", p, "{occ}:mutex", "{occ}:none", 1, true, i%8 == 7)
				case "nolock": // the detector's control: no lock at all
					section("{occ}:mutex", "{occ}:none", 1)
				case "sem":
					sp := p
					sp.Limit = 2
					lock(ctx, "mixed:sem", sp, "{occ}:sem", "{occ}:none", 2, false, false)
				case "rw":
					rp := p
					if (g+i)%4 == 0 {
						rp.Mode = locker.Write
						lock(ctx, "mixed:rw", rp, "{occ}:w", "{occ}:r", 1, false, false)
					} else {
						rp.Mode = locker.Read
						lock(ctx, "mixed:rw", rp, "{occ}:r", "{occ}:w", 1<<30, false, false)
					}
				case "job":
					err := jb.Run(ctx, func(context.Context, int64) error {
						section("{occ}:job", "{occ}:none", 1)
						return nil
					})
					switch {
					case errors.Is(err, job.ErrSkipped), errors.Is(err, locker.ErrNotObtained):
						busy.Add(1)
					case err != nil:
						note(err)
					}
				case "multi":
					keys := [][]string{{"mixed:k1", "mixed:k2"}, {"mixed:k2", "mixed:k3"}, {"mixed:k1", "mixed:k3"}}[(g+i)%3]
					multi(ctx, lk, keys, p, section, &busy, note)
				case "idem":
					idem(ctx, lk, det, i, &ops, &busy, note)
					time.Sleep(time.Millisecond) // pacing: a replay is all the rest; not synchronisation
				case "httpidem":
					httpIdem(ctx, httpGuard, det, i, &ops, &busy, note)
					time.Sleep(time.Millisecond) // pacing: a replay is all the rest; not synchronisation
				case "rate":
					// Not cut short at the end: a decision asked for before it
					// counts, however late its reply comes on a busy machine.
					_, err := lk.Allow(context.Background(), "mixed:rate", locker.RateParams{Limit: *rate, Period: time.Second})
					switch {
					case err == nil:
						ops.Add(1)
					case errors.Is(err, locker.ErrRateLimited):
						busy.Add(1)
					default:
						note(err)
					}
					time.Sleep(2 * time.Millisecond) // pacing, still many times the rate; not synchronisation
				default:
					fail(fmt.Errorf("unknown kind %q", *kind))
				}
			}
		}()
	}
	wg.Wait()
	res.Ops, res.Busy, res.Overlaps, res.Stale = ops.Load(), busy.Load(), overlaps.Load(), stale.Load()
	_ = json.NewEncoder(os.Stdout).Encode(res)
}

// multi takes two keys at once; each key's occupancy is checked.
func multi(ctx context.Context, lk *locker.Locker, keys []string, p locker.Params, section func(string, string, int64), busy *atomic.Int64, note func(error)) {
	le, err := lk.ObtainMany(ctx, keys, p)
	if errors.Is(err, locker.ErrNotObtained) {
		busy.Add(1)
		return
	}
	if err != nil {
		note(err)
		return
	}
	// Both keys' sections at once would count one section twice: check
	// them one after the other, under the one multi-key lease.
	section("{occ}:"+keys[0], "{occ}:none", 1)
	section("{occ}:"+keys[1], "{occ}:none", 1)
	if err := le.Release(context.Background()); err != nil {
		note(err)
	}
}

// httpIdem sends request i%64 of a fixed set of HTTP requests through an
// idempotency guard, described as the HTTP adapters describe it
// (httprecord.Request: the parts of Fingerprint1, and, where the release
// has them, the canonical parts of Fingerprint2, set by name so that the
// source builds against releases without them): the first execution of
// each counts in exec:h<n>, every later one replays. A mismatch (422)
// would be a record one release wrote that the other does not honour.
func httpIdem(ctx context.Context, g *guard.Idempotency[struct{}], det *redis.Pool, i int, ops, busy *atomic.Int64, note func(error)) {
	n := strconv.Itoa(i % 64)
	body := []byte(`{"order":` + n + `}`)
	q := guard.Request{
		Route: "POST /orders/:id",
		Keys:  []string{"mixed-h" + n},
		Parts: []string{"POST", "/orders/:id", "/orders/" + n, ""},
		Body:  func(int64) ([]byte, error) { return body, nil },
	}
	if f := reflect.ValueOf(&q).Elem().FieldByName("Canonical"); f.IsValid() {
		f.Set(reflect.ValueOf([]string{"POST", "/orders/:id", "/orders/" + n, "", "application/json", ""}))
	}
	o := g.Run(ctx, struct{}{}, q, func(context.Context) guard.Answer {
		conn := det.Get()
		_, err := conn.Do("INCR", "{occ}:exec:h"+n)
		conn.Close()
		if err != nil {
			note(err)
		}
		ops.Add(1)
		return guard.Answer{Status: 200, Payload: body, Sent: true}
	})
	switch o.Kind {
	case guard.OK:
	case guard.Replay, guard.InFlight:
		busy.Add(1)
	default:
		if ctx.Err() == nil {
			note(fmt.Errorf("http idempotency: %v: %v", o.Kind, o.Err))
		}
	}
}

// idem runs request i%64 of a fixed set under its idempotency key: the
// first execution of each counts in exec:<n>, every later one replays.
func idem(ctx context.Context, lk *locker.Locker, det *redis.Pool, i int, ops, busy *atomic.Int64, note func(error)) {
	n := strconv.Itoa(i % 64)
	c, err := lk.Idempotent(ctx, "mixed:idem:"+n, n, locker.IdempotencyParams{TTL: time.Minute, Wait: 2 * time.Second})
	switch {
	case errors.Is(err, locker.ErrInFlight), errors.Is(err, locker.ErrNotObtained):
		busy.Add(1)
		return
	case err != nil:
		note(err)
		return
	}
	if _, replay := c.Replay(); replay {
		busy.Add(1)
		return
	}
	conn := det.Get()
	_, err = conn.Do("INCR", "{occ}:exec:"+n)
	conn.Close()
	if err != nil {
		note(err)
	}
	ops.Add(1)
	if err := c.Complete(context.Background(), []byte("done")); err != nil {
		note(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "worker:", err)
	os.Exit(2)
}
