package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/gomodule/redigo/redis"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
	goredis "github.com/redis/go-redis/v9"
)

// The burst's buyers run in child processes of the tool (-burst-child); this
// file is their side. Each child opens one client of the library, warms its
// pool, and at the mono time t0 lets all its buyers loose on the one key.

// burstLib is a library as the burst scenario runs it. open gives every Lock
// call a wait of its own; queue says whether the lock keeps a Redis-side
// queue and channel the parent can watch (locktag's).
type burstLib struct {
	name    string
	queue   bool
	cluster bool // on the Cluster's masters (the cluster scenario), not the single server
	open    func(addrs []string, buyers int, reqs *atomic.Int64, wait time.Duration) (Lock, func(), error)
}

// burstLibs are the single-node locks of subjects().
func burstLibs() []burstLib {
	var out []burstLib
	for _, s := range subjects() {
		if s.isLock && s.nodes == 1 {
			out = append(out, burstLibOf(s))
		}
	}
	return out
}

// burstLibOf is s as the burst runs it. locktag runs on the pool a user
// copies from the example app the README runs (readmePool) with Params.Wait,
// as the tag `wait:"5s"` sets it; the others keep their usual clients and
// get the wait as a deadline on ctx, having no wait of their own.
func burstLibOf(s subject) burstLib {
	switch s.name {
	case "locktag":
		return burstLib{name: s.name, queue: true, open: openLocktagBurst()}
	case "locktag-pooled":
		return burstLib{name: s.name, queue: true, open: openLocktagBurst(redigo.WithPipelining(0))}
	case "locktag-1conn":
		return burstLib{name: s.name, queue: true, open: openLocktagBurst(redigo.WithPipelining(1))}
	case "locktag-goredis":
		// A pool as large as example-app's redigo pool keeps idle (64).
		return burstLib{name: s.name, queue: true, open: func(addrs []string, _ int, reqs *atomic.Int64, wait time.Duration) (Lock, func(), error) {
			return goredisLocktag(addrs[0], 64, reqs, locker.Params{Wait: wait})
		}}
	case "locktag-rueidis":
		return burstLib{name: s.name, queue: true, open: func(addrs []string, _ int, reqs *atomic.Int64, wait time.Duration) (Lock, func(), error) {
			return rueidisLocktag(addrs[:1], reqs, locker.Params{Wait: wait})
		}}
	}
	return burstLib{name: s.name, open: waitByDeadline(s)}
}

// clusterBurstLibs are the locks of clusterSubjects as the burst runs them:
// locktag with Params.Wait and a watchdog lease (go-redis with a pool of
// 64 per node, as in the single-server burst), the peers with the wait as
// a deadline on ctx.
func clusterBurstLibs() []burstLib {
	var out []burstLib
	for _, s := range clusterSubjects() {
		if !s.isLock {
			continue
		}
		b := burstLib{name: s.name, cluster: true, open: waitByDeadline(s)}
		switch s.name {
		case "locktag-goredis":
			b.queue, b.open = true, func(addrs []string, _ int, reqs *atomic.Int64, wait time.Duration) (Lock, func(), error) {
				return goredisClusterLocktag(addrs, 64, reqs, locker.Params{Wait: wait})
			}
		case "locktag-rueidis":
			b.queue, b.open = true, func(addrs []string, _ int, reqs *atomic.Int64, wait time.Duration) (Lock, func(), error) {
				return rueidisLocktag(addrs, reqs, locker.Params{Wait: wait})
			}
		}
		out = append(out, b)
	}
	return out
}

func burstLibByName(name string, cluster bool) (burstLib, bool) {
	if cluster {
		for _, b := range clusterBurstLibs() {
			if b.name == name {
				return b, true
			}
		}
		return burstLib{}, false
	}
	s, ok := subjectByName(name)
	if !ok || s.nodes != 1 {
		return burstLib{}, false
	}
	return burstLibOf(s), true
}

// readmePool is the pool of example-app/backend.go (newPool), the app the
// README runs against a real Redis: MaxIdle 64, no MaxActive, 2s connect and
// 3s read/write timeouts. The counting Conn changes nothing it sends.
func readmePool(addr string, reqs *atomic.Int64) *redis.Pool {
	return &redis.Pool{
		MaxIdle:     64,
		IdleTimeout: time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			c, err := redis.DialContext(ctx, "tcp", addr,
				redis.DialConnectTimeout(2*time.Second),
				redis.DialReadTimeout(3*time.Second),
				redis.DialWriteTimeout(3*time.Second))
			if err != nil {
				return nil, err
			}
			return countConn{Conn: c, n: reqs}, nil
		},
	}
}

// openLocktagBurst obtains with Params{Wait: wait} and no TTL: the watchdog
// lease a tag without `expire` asks for.
func openLocktagBurst(dopts ...redigo.Option) func([]string, int, *atomic.Int64, time.Duration) (Lock, func(), error) {
	return func(addrs []string, _ int, reqs *atomic.Int64, wait time.Duration) (Lock, func(), error) {
		return locktagOn([]*redis.Pool{readmePool(addrs[0], reqs)}, locker.Params{Wait: wait}, dopts...)
	}
}

// waitByDeadline opens s and bounds each of its Lock calls by wait.
func waitByDeadline(s subject) func([]string, int, *atomic.Int64, time.Duration) (Lock, func(), error) {
	return func(addrs []string, buyers int, reqs *atomic.Int64, wait time.Duration) (Lock, func(), error) {
		l, closeFn, err := s.open(addrs, buyers, reqs)
		if err != nil {
			return nil, nil, err
		}
		return deadlineLock{l, wait}, closeFn, nil
	}
}

type deadlineLock struct {
	l    Lock
	wait time.Duration
}

func (d deadlineLock) Lock(ctx context.Context, key string) (func() error, error) {
	ctx, cancel := context.WithTimeout(ctx, d.wait)
	defer cancel() // the adapters release with a context that outlives this one
	return d.l.Lock(ctx, key)
}

// errClass sorts a failed Lock call: busy (the wait ran out: 409 in a
// service), unavailable (Redis or the network failed: 503), or other.
type errClass int

const (
	classBusy errClass = iota
	classUnavailable
	classOther
)

func classify(err error) errClass {
	var ne net.Error
	switch {
	case errors.Is(err, locker.ErrUnavailable):
		return classUnavailable
	case errors.Is(err, locker.ErrNotObtained), errors.Is(err, redislock.ErrNotObtained),
		errors.Is(err, redsync.ErrFailed), errors.Is(err, context.DeadlineExceeded):
		return classBusy
	case errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, redis.ErrPoolExhausted), errors.Is(err, goredis.ErrPoolTimeout):
		return classUnavailable
	}
	return classOther
}

// errBackoff is how long a buyer waits before retrying after an error;
// after busy it retries at once (its Lock call has already waited).
const errBackoff = 10 * time.Millisecond

// burstRec is one acquisition: the Lock call, when its buyer arrived, and
// whether it sold (false: the buyer found the stock gone).
type burstRec struct {
	rec
	Arrived int64
	Sold    bool
}

// burstResult is what a burst child hands back through its output file.
type burstResult struct {
	Acqs                     []burstRec
	Busy, Unavailable, Other int64
	ReleaseErrs              int64
	Errors                   map[string]int64 // error text -> count, for the first maxErrTexts texts
	Reqs                     int64
	Live                     int64         // the in-process overlap detector
	Late                     time.Duration // how late the buyers started after t0
	Stuck                    int           // buyers still running when the child gave up waiting for them
}

const maxErrTexts = 12

// addrRE matches host:port in error texts, which differ by ephemeral port.
var addrRE = regexp.MustCompile(`\d{1,3}(\.\d{1,3}){3}:\d+`)

// buyers is one child's share of the burst.
type buyers struct {
	l          Lock
	key        string
	stockKey   string
	stock      *redis.Pool // the shop's own connections, not the lock's
	hold       time.Duration
	closed     bool
	t0         int64
	det        *holders
	soldOut    context.CancelFunc
	busy       atomic.Int64
	unavail    atomic.Int64
	other      atomic.Int64
	releaseErr atomic.Int64
	mu         sync.Mutex
	acqs       []burstRec
	errs       map[string]int64
}

// buy runs buyer id until it has bought, the stock is gone, or ctx ends.
// In a closed run a new buyer arrives each time one has bought.
func (b *buyers) buy(ctx context.Context, id int32) {
	arrived := b.t0
	for ctx.Err() == nil {
		r := rec{Called: mono(), Worker: id}
		unlock, err := b.l.Lock(ctx, b.key)
		r.Acquired = mono()
		if err != nil {
			if ctx.Err() != nil {
				return // the buyer left: sold out, or out of time
			}
			if b.count(err) != classBusy {
				sleepCtx(ctx, errBackoff)
			}
			continue
		}
		n := b.det.enter(b.key)
		left, sold, serr := b.sell()
		r.Released = mono()
		n.Add(-1)
		if err := unlock(); err != nil {
			b.releaseErr.Add(1)
		}
		r.Done = mono()
		b.mu.Lock()
		b.acqs = append(b.acqs, burstRec{rec: r, Arrived: arrived, Sold: sold})
		b.mu.Unlock()
		switch {
		case serr != nil:
			b.count(serr)
			sleepCtx(ctx, errBackoff)
			continue
		case left <= 0:
			b.soldOut()
		}
		if !sold || !b.closed {
			return
		}
		arrived = mono()
	}
}

// sell is the critical section: read the stock, hold, write it back one
// less. Two holders at once would both write the same value: a lost
// update the parent finds as sales the stock does not account for.
func (b *buyers) sell() (left int, sold bool, err error) {
	c := b.stock.Get()
	defer c.Close()
	n, err := redis.Int(c.Do("GET", b.stockKey))
	if err != nil || n <= 0 {
		return n, false, err
	}
	time.Sleep(b.hold)
	if _, err := c.Do("SET", b.stockKey, n-1); err != nil {
		return n, false, err
	}
	return n - 1, true, nil
}

func (b *buyers) count(err error) errClass {
	cl := classify(err)
	switch cl {
	case classBusy:
		b.busy.Add(1)
		return cl
	case classUnavailable:
		b.unavail.Add(1)
	default:
		b.other.Add(1)
	}
	msg := addrRE.ReplaceAllString(err.Error(), "ADDR")
	if len(msg) > 120 {
		msg = msg[:120]
	}
	b.mu.Lock()
	if _, ok := b.errs[msg]; ok || len(b.errs) < maxErrTexts {
		b.errs[msg]++
	}
	b.mu.Unlock()
	return cl
}

// watchStock ends the run for every buyer of this process once the stock
// is gone, whichever process sold the last unit.
func (b *buyers) watchStock(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c := b.stock.Get()
		n, err := redis.Int(c.Do("GET", b.stockKey))
		c.Close()
		if err == nil && n <= 0 {
			b.soldOut()
			return
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// warmUp takes and releases n locks on keys of their own at once, so the
// pool holds its idle connections (and locktag its subscriber) as in a
// service that has been serving before the sale opens.
func warmUp(l Lock, key string, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if unlock, err := l.Lock(ctx, fmt.Sprintf("%s:warm:%d", key, i)); err == nil {
				_ = unlock()
			}
		})
	}
	wg.Wait()
}

func burstChildMain(args []string) int {
	fs := newChildFlags()
	if err := fs.fs.Parse(args); err != nil {
		return 2
	}
	lib, ok := burstLibByName(*fs.lib, *fs.cluster)
	if !ok {
		fmt.Fprintf(os.Stderr, "burst child: unknown lib %q\n", *fs.lib)
		return 2
	}
	var reqs atomic.Int64
	l, closeFn, err := lib.open(strings.Split(*fs.addrs, ","), *fs.c, &reqs, *fs.wait)
	if err != nil {
		fmt.Fprintf(os.Stderr, "burst child: %v\n", err)
		return 1
	}
	stock := &redis.Pool{MaxIdle: 4, MaxActive: 4, Wait: true, Dial: func() (redis.Conn, error) {
		return redis.Dial("tcp", *fs.stockAddr, redis.DialConnectTimeout(2*time.Second),
			redis.DialReadTimeout(3*time.Second), redis.DialWriteTimeout(3*time.Second))
	}}
	defer stock.Close()
	warmUp(l, fmt.Sprintf("%s:%d", *fs.key, *fs.base), 64)

	end := time.Now().Add(time.Duration(*fs.end - mono()))
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	b := &buyers{l: l, key: *fs.key, stockKey: *fs.stock, stock: stock, hold: *fs.hold, closed: *fs.closed,
		t0: *fs.t0, det: &holders{m: map[string]*atomic.Int32{}}, soldOut: cancel, errs: map[string]int64{}}
	time.Sleep(time.Duration(*fs.t0 - mono()))
	late := time.Duration(mono() - *fs.t0)
	r0 := reqs.Load()
	var wg sync.WaitGroup
	var running atomic.Int64
	for i := range *fs.c {
		running.Add(1)
		wg.Go(func() {
			defer running.Add(-1)
			b.buy(ctx, int32(*fs.base+i))
		})
	}
	go b.watchStock(ctx)
	<-ctx.Done()
	// Every Lock call honours ctx and every release is bounded, so the
	// buyers end soon; a child that waited longer would hide it, so give up
	// after a while and say how many were stuck.
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(15 * time.Second):
	}
	reqsUsed := reqs.Load() - r0
	closed := make(chan struct{})
	go func() { closeFn(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
	}

	b.mu.Lock()
	res := burstResult{Acqs: b.acqs, Busy: b.busy.Load(), Unavailable: b.unavail.Load(), Other: b.other.Load(),
		ReleaseErrs: b.releaseErr.Load(), Errors: b.errs, Reqs: reqsUsed, Live: b.det.violations.Load(),
		Late: late, Stuck: int(running.Load())}
	out, _ := json.Marshal(res)
	b.mu.Unlock()
	if err := os.WriteFile(*fs.out, out, 0o600); err != nil {
		fmt.Fprintf(os.Stderr, "burst child: %v\n", err)
		return 1
	}
	return 0
}
