package reliability

import (
	"bufio"
	"context"
	"errors"
	"fmt"
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

// The kinds burst: the flash-sale scenario of locker's TestBurst (a crowd
// arriving at once at one key, from several processes) for the lock kinds
// other than the mutex — a semaphore and a read/write lock. Each child
// process starts its waiters together when the parent says "go"; every
// holder counts itself in and out of an occupancy detector kept in Redis
// (one Lua script per step, so the count is exact across processes), which
// records the most holders seen at once and every forbidden overlap.

// envWriters names the variable with which the parent asks a "kindburst"
// child for a read/write burst: every n-th waiter is a writer, the others
// readers. Unset or 0: every waiter uses the kind of LT_LIMIT / LT_MODE.
const envWriters = "LT_WRITERS"

// Occupancy detector keys: plain keys, apart from the locks' own.
const (
	occReaders = "occ:r"     // holders in a shared section (readers, permits)
	occWriters = "occ:w"     // writers in their section
	occMaxR    = "occ:max:r" // most shared holders seen at once
	occMaxW    = "occ:max:w" // most writers seen at once
	occBad     = "occ:bad"   // entries that met a forbidden overlap
)

// occEnter counts a holder in (ARGV[1] "r" shared, "w" exclusive), keeps the
// maxima, and counts a forbidden overlap: a writer with anyone else in, or
// a reader with a writer in. Whichever of two overlapping holders enters
// second sees the other, so no overlap escapes.
var occEnter = redis.NewScript(5, `
local r, w
if ARGV[1] == 'w' then
  w = redis.call('INCR', KEYS[2])
  r = tonumber(redis.call('GET', KEYS[1]) or '0')
  if w > 1 or r > 0 then redis.call('INCR', KEYS[5]) end
  if w > tonumber(redis.call('GET', KEYS[4]) or '0') then redis.call('SET', KEYS[4], w) end
else
  r = redis.call('INCR', KEYS[1])
  w = tonumber(redis.call('GET', KEYS[2]) or '0')
  if w > 0 then redis.call('INCR', KEYS[5]) end
  if r > tonumber(redis.call('GET', KEYS[3]) or '0') then redis.call('SET', KEYS[3], r) end
end
return 0`)

// occLeave counts a holder out (the keys as occEnter's).
var occLeave = redis.NewScript(5, `
if ARGV[1] == 'w' then redis.call('DECR', KEYS[2]) else redis.call('DECR', KEYS[1]) end
return 0`)

// childKindBurst readies LT_ITERS waiters on LT_KEY (TTL LT_TTL, wait
// LT_WAIT, the kind LT_LIMIT / LT_MODE, or readers and writers with
// LT_WRITERS), prints "READY", and on the line "go" starts them all at
// once. A waiter that obtains the lock counts itself into the occupancy
// detector, works LT_THINK, counts itself out and releases. Then the child
// prints one line
//
//	RESULT got timeout early unavail other lost wgot wtimeout maxwait wmaxwait
//
// (obtained; timed out cleanly, ErrNotObtained after the whole wait;
// timed out before the wait ended; ErrUnavailable; any other error; holds
// whose lease was lost during the section; of the writers: obtained, timed
// out; the longest wait of a served non-writer and writer, ms), "ERR ..." lines for the first few unexpected errors, and "DONE".
func childKindBurst() {
	e := readChildEnv()
	lk := e.locker()
	every, _ := strconv.Atoi(os.Getenv(envWriters))
	pool := &redis.Pool{MaxIdle: 32, DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", e.addr, redis.DialReadTimeout(10*time.Second), redis.DialWriteTimeout(10*time.Second))
	}}
	var got, timeout, early, unavail, other, lost, wgot, wtimeout, errLines atomic.Int64
	var maxWait, wmaxWait atomic.Int64 // longest waits of those served (ms): shared or permits, writers
	occ := func(s *redis.Script, kind string) {
		c := pool.Get()
		defer c.Close()
		if _, err := s.Do(c, occReaders, occWriters, occMaxR, occMaxW, occBad, kind); err != nil {
			say("ERR detector: %v", err)
		}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range e.iters {
		p := e.params()
		kind := "r" // a semaphore's permit counts as a shared hold
		switch {
		case every > 0 && i%every == 0:
			p.Mode, kind = locker.Write, "w"
		case every > 0:
			p.Mode = locker.Read
		case p.Mode == locker.Write:
			kind = "w"
		}
		wg.Go(func() {
			<-start
			ctx := context.Background()
			began := time.Now()
			le, err := lk.Obtain(ctx, e.key, p)
			switch {
			case err == nil:
				got.Add(1)
				waited := time.Since(began).Milliseconds()
				peak := &maxWait
				if kind == "w" {
					wgot.Add(1)
					peak = &wmaxWait
				}
				for m := peak.Load(); waited > m && !peak.CompareAndSwap(m, waited); m = peak.Load() {
				}
			case errors.Is(err, locker.ErrUnavailable):
				unavail.Add(1)
			case errors.Is(err, locker.ErrNotObtained) && time.Since(began) >= p.Wait:
				timeout.Add(1)
				if kind == "w" {
					wtimeout.Add(1)
				}
			case errors.Is(err, locker.ErrNotObtained):
				early.Add(1)
			default:
				other.Add(1)
			}
			if err != nil {
				if errLines.Add(1) <= 5 {
					say("ERR %v", err)
				}
				return
			}
			occ(occEnter, kind)
			time.Sleep(e.think) // the section's work
			occ(occLeave, kind)
			if le.Context().Err() != nil {
				lost.Add(1)
				if errLines.Add(1) <= 5 {
					say("ERR lost: %v, %v after the wait began", context.Cause(le.Context()), time.Since(began))
				}
			}
			if err := le.Release(context.Background()); err != nil {
				other.Add(1)
				say("ERR release: %v", err)
			}
		})
	}
	say("READY")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() && sc.Text() != "go" {
	}
	close(start)
	wg.Wait()
	say("RESULT %d %d %d %d %d %d %d %d %d %d", got.Load(), timeout.Load(), early.Load(), unavail.Load(), other.Load(), lost.Load(), wgot.Load(), wtimeout.Load(), maxWait.Load(), wmaxWait.Load())
	say("DONE")
}

// kindBurst is a burst's plan: per-process waiters of one kind (child),
// or readers and writers (every writers-th a writer).
type kindBurst struct {
	procs, waiters int // processes, waiters in each
	child          childEnv
	writers        int
	prefix         func(i int) string // process i's key prefix; nil: the default
}

// kindBurstResult is what a burst did, summed over the processes, and what
// the detector saw.
type kindBurstResult struct {
	got, timeout, early, unavail, other, lost, wgot, wtimeout int64
	maxWait, wmaxWait                                         time.Duration // longest waits of those served: non-writers, writers
	maxShared, maxWriters, bad                                int64
	errs                                                      []string
	left                                                      []string // Redis keys of the lock left behind
	took                                                      time.Duration
}

// runKindBurst runs b against a fresh redis-server and returns its result.
// The bound on the whole burst is generous (a loaded 2-core machine under
// -race); a hang in a lock's hand-over would run past it.
func runKindBurst(t *testing.T, key string, b kindBurst) kindBurstResult {
	t.Helper()
	srv := redistest.Start(t)
	children := make([]*faults.Child, b.procs)
	for i := range children {
		e := b.child
		e.addr, e.key, e.iters = srv.Addr(), key, b.waiters
		if b.prefix != nil {
			e.prefix = b.prefix(i)
		}
		children[i] = faults.StartChild(t, "kindburst", append(e.env(), envWriters+"="+strconv.Itoa(b.writers))...)
	}
	for _, ch := range children {
		ch.Expect("READY", 60*time.Second)
	}
	start := time.Now()
	for _, ch := range children {
		ch.Send("go")
	}
	var r kindBurstResult
	deadline := time.Now().Add(3 * time.Minute)
	for i, ch := range children {
		for done := false; !done; {
			line, ok := ch.Next(time.Until(deadline))
			if !ok {
				t.Fatalf("process %d exited before DONE; stderr: %s", i, ch.Stderr())
			}
			switch f := strings.Fields(line); f[0] {
			case "RESULT":
				var n [10]int64
				for j := range n {
					n[j], _ = strconv.ParseInt(f[j+1], 10, 64)
				}
				r.got += n[0]
				r.timeout += n[1]
				r.early += n[2]
				r.unavail += n[3]
				r.other += n[4]
				r.lost += n[5]
				r.wgot += n[6]
				r.wtimeout += n[7]
				r.maxWait = max(r.maxWait, time.Duration(n[8])*time.Millisecond)
				r.wmaxWait = max(r.wmaxWait, time.Duration(n[9])*time.Millisecond)
			case "ERR":
				r.errs = append(r.errs, fmt.Sprintf("process %d: %s", i, line))
			case "DONE":
				done = true
			}
		}
	}
	r.took = time.Since(start)
	get := func(k string) int64 {
		n, err := redis.Int64(srv.Do("GET", k))
		if err != nil && !errors.Is(err, redis.ErrNil) {
			t.Fatal(err)
		}
		return n
	}
	r.maxShared, r.maxWriters, r.bad = get(occMaxR), get(occMaxW), get(occBad)
	if in := get(occReaders) + get(occWriters); in != 0 {
		t.Fatalf("detector: %d holders still counted in after the burst", in)
	}
	r.left = leftBehind(t, srv, key)
	return r
}

// leftBehind lists what of lock key (any prefix, any kind) is left in
// Redis that should not be: nobody may hold the lock or be queued for it.
// A lock's waiter details may stay with only records that outlive their
// holders (a semaphore's "#" limit, a read/write lock's last token), and
// these expire by themselves: a key left without an expiry is a leak.
func leftBehind(t *testing.T, srv *redistest.Server, key string) []string {
	t.Helper()
	keys, err := redis.Strings(srv.Do("KEYS", "*{"+key+"}*"))
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, k := range keys {
		pttl, err := redis.Int64(srv.Do("PTTL", k))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(k, ":w") && pttl > 0:
			fields, _ := redis.Strings(srv.Do("HKEYS", k))
			t.Logf("%s left to expire in %v, fields %q", k, time.Duration(pttl)*time.Millisecond, fields)
		default:
			left = append(left, k)
		}
	}
	return left
}

// check fails t unless every waiter of r was served (the waits are
// generous: a timeout here is a lost hand-over), none saw Redis as
// unavailable, no lease was lost, and nothing of the lock is left behind.
func (r kindBurstResult) check(t *testing.T, total int64) {
	t.Helper()
	for _, e := range r.errs {
		t.Error(e)
	}
	if r.unavail != 0 {
		t.Errorf("%d acquisitions failed as unavailable while Redis was up", r.unavail)
	}
	if r.early != 0 || r.other != 0 {
		t.Errorf("%d waits ended before their wait, %d other errors", r.early, r.other)
	}
	if r.got+r.timeout != total {
		t.Errorf("%d served + %d timed out of %d waiters: some did not answer", r.got, r.timeout, total)
	}
	if r.timeout != 0 {
		t.Errorf("%d waiters timed out cleanly, but within waits this long every one should be served", r.timeout)
	}
	if r.lost != 0 {
		t.Errorf("%d holds lost their lease during the section", r.lost)
	}
	if len(r.left) != 0 {
		t.Errorf("left behind in Redis: %v", r.left)
	}
}

// burstWindow is the bursts' grant window (locker.WithGrantWindow). A
// waiter handed the lock holds it for the window until its first renewal,
// a third of the way in, confirms it; a process starved longer than that
// loses the lock at the hand-over, as documented. Hundreds of waiters per
// process under -race on a loaded 2-core machine starve a process for
// more than the default 250ms now and then (measured: tens of lost holds
// per burst), so the bursts use a window fit for that machine; what a
// lapsed grant costs is TestPausedWaitersCutOff's subject.
const burstWindow = 5 * time.Second

// burstCallTimeout bounds each Redis call of the bursts' Lockers, including
// its wait for one of the Locker's call slots (WithMaxConcurrentCalls). At
// 700 waiters per process under -race on a loaded machine that wait passed
// the children's usual 1s now and then (48 of 2,100 calls failed as
// unavailable, "waiting for a call slot"), so the bursts allow 10s: a
// burst must not read as Redis being down while it is up.
const burstCallTimeout = 10 * time.Second

// semBurst is the semaphore burst's plan: waiters per process over three
// processes, limit permits, each held for a short section.
func semBurst(waiters, limit int, prefix func(int) string) kindBurst {
	return kindBurst{procs: 3, waiters: waiters, prefix: prefix,
		child: childEnv{limit: limit, ttl: 20 * time.Second, wait: 2 * time.Minute, think: 3 * time.Millisecond, window: burstWindow, call: burstCallTimeout}}
}
