package robustness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	goredisclient "github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/reliability/faults"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/goredis"
	"github.com/locktag/locktag/locker/redigo"
)

// TestHelperProcess is not a test: it is the body of the worker processes
// the suite starts (the test binary run again by faults.StartChild). In a
// normal run it skips.
func TestHelperProcess(t *testing.T) {
	switch faults.Role() {
	case "":
		t.Skip("only runs as a worker process started by TestRobustness")
	case roleLock:
		runLockWorker(readWorkerEnv())
	case roleIdem:
		runIdemWorker(readWorkerEnv())
	default:
		fmt.Fprintln(os.Stderr, "unknown role", faults.Role())
		os.Exit(2)
	}
	os.Exit(0)
}

// The worker roles.
const (
	roleLock = "robust-lock" // takes locks and reads and writes the register under them
	roleIdem = "robust-idem" // runs idempotent requests
)

// workerEnv is what a worker reads from its environment.
type workerEnv struct {
	addr    string        // the lock Redis (or the proxy in front of it)
	store   string        // the register's Redis (never faulted)
	epoch   int64         // the parent's clock origin, Unix ns
	client  int           // the first client id of this process
	keys    []string      // lock keys, or idempotency request prefix
	lease   time.Duration // watchdog lease (idempotency in-flight lease)
	lock    string        // "real" or "naive"
	fenced  bool          // the register checks fencing tokens
	evict   bool          // locker.WithEvictionAllowed
	seed    uint64        // the workload's random source
	threads int           // goroutines (idempotency workers)
	// sentinels or cluster, when set, are the addresses the Locker
	// reaches Redis by (go-redis's failover or cluster client) instead
	// of addr; ack is locker.WithReplicaAck(1, 200ms).
	sentinels, cluster []string
	ack                bool
	wait               time.Duration // Params.Wait of each acquisition
}

func (e workerEnv) env() []string {
	return []string{
		"RB_ADDR=" + e.addr, "RB_STORE=" + e.store,
		"RB_EPOCH=" + strconv.FormatInt(e.epoch, 10), "RB_CLIENT=" + strconv.Itoa(e.client),
		"RB_KEYS=" + strings.Join(e.keys, ","), "RB_LEASE=" + e.lease.String(),
		"RB_LOCK=" + e.lock, "RB_FENCED=" + strconv.FormatBool(e.fenced),
		"RB_EVICT=" + strconv.FormatBool(e.evict), "RB_SEED=" + strconv.FormatUint(e.seed, 10),
		"RB_THREADS=" + strconv.Itoa(e.threads),
		"RB_SENTINELS=" + strings.Join(e.sentinels, ","), "RB_CLUSTER=" + strings.Join(e.cluster, ","),
		"RB_ACK=" + strconv.FormatBool(e.ack), "RB_WAIT=" + e.wait.String(),
	}
}

func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func readWorkerEnv() workerEnv {
	epoch, _ := strconv.ParseInt(os.Getenv("RB_EPOCH"), 10, 64)
	client, _ := strconv.Atoi(os.Getenv("RB_CLIENT"))
	lease, _ := time.ParseDuration(os.Getenv("RB_LEASE"))
	seed, _ := strconv.ParseUint(os.Getenv("RB_SEED"), 10, 64)
	threads, _ := strconv.Atoi(os.Getenv("RB_THREADS"))
	fenced, _ := strconv.ParseBool(os.Getenv("RB_FENCED"))
	evict, _ := strconv.ParseBool(os.Getenv("RB_EVICT"))
	ack, _ := strconv.ParseBool(os.Getenv("RB_ACK"))
	wait, _ := time.ParseDuration(os.Getenv("RB_WAIT"))
	return workerEnv{
		wait:      wait,
		sentinels: list(os.Getenv("RB_SENTINELS")), cluster: list(os.Getenv("RB_CLUSTER")), ack: ack,
		addr: os.Getenv("RB_ADDR"), store: os.Getenv("RB_STORE"), epoch: epoch, client: client,
		keys: strings.Split(os.Getenv("RB_KEYS"), ","), lease: lease, lock: os.Getenv("RB_LOCK"),
		fenced: fenced, evict: evict, seed: seed, threads: max(threads, 1),
	}
}

// clock is the suite's one clock: nanoseconds since the parent's epoch,
// read from this process's monotonic clock. Each process anchors it once,
// by the wall clock they share, to the parent's start.
type clock struct {
	base time.Time // this process's anchor (carries a monotonic reading)
	off  int64     // base's distance from the epoch, ns
}

func newClock(epoch int64) clock {
	base := time.Now()
	return clock{base: base, off: base.UnixNano() - epoch}
}

func (c clock) now() int64 { return c.off + int64(time.Since(c.base)) }

// event is one line a worker prints: the call ("c") or the return ("r")
// of an operation, or a reply to a control command ("pin").
type event struct {
	E      string `json:"e"`
	ID     int64  `json:"id,omitempty"`
	Client int    `json:"cl,omitempty"`
	Op     string `json:"op,omitempty"`
	Key    string `json:"key,omitempty"`
	Tok    int64  `json:"tok,omitempty"`
	Val    int64  `json:"v,omitempty"`
	T      int64  `json:"t"`
	Out    string `json:"out,omitempty"` // ok, stale, busy, notheld, fail, unknown, replay, exec, refused
	Done   string `json:"done,omitempty"`
	Valid  bool   `json:"valid,omitempty"` // register operations: the lease was valid after it
	Err    string `json:"err,omitempty"`
}

// recorder prints events on stdout, one JSON object a line.
type recorder struct {
	clk  clock
	mu   sync.Mutex
	enc  *json.Encoder
	next atomic.Int64
}

func newRecorder(epoch int64) *recorder {
	return &recorder{clk: newClock(epoch), enc: json.NewEncoder(os.Stdout)}
}

func (r *recorder) emit(e event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.enc.Encode(e)
}

// call records an operation's call and returns its id; the time is taken
// right before the operation starts.
func (r *recorder) call(client int, op, key string, tok, val int64) int64 {
	id := r.next.Add(1)
	r.emit(event{E: "c", ID: id, Client: client, Op: op, Key: key, Tok: tok, Val: val, T: r.clk.now()})
	return id
}

// ret records an operation's return, the time taken right after it.
func (r *recorder) ret(id int64, out string, tok, val int64, done string, err error) {
	e := event{E: "r", ID: id, Out: out, Tok: tok, Val: val, Done: done, T: r.clk.now()}
	if err != nil {
		e.Err = err.Error()
	}
	r.emit(e)
}

// retValid records the return of a register operation with whether the
// holder's lease was still valid after it (Lease.Lost, read after the
// operation returned: a refusal while it was is a second holder granted
// while the first one's lease ran).
func (r *recorder) retValid(id int64, out string, tok, val int64, valid bool, err error) {
	e := event{E: "r", ID: id, Out: out, Tok: tok, Val: val, Valid: valid, T: r.clk.now()}
	if err != nil {
		e.Err = err.Error()
	}
	r.emit(e)
}

// outcome classifies a locker error: "unknown" when the call may have
// reached Redis and done its work, "fail" when it certainly did nothing.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, locker.ErrNotSent), errors.Is(err, locker.ErrPoolExhausted):
		return "fail"
	case errors.Is(err, locker.ErrNotObtained), errors.Is(err, locker.ErrInFlight), errors.Is(err, locker.ErrMismatch):
		return "busy"
	case errors.Is(err, locker.ErrNotHeld):
		return "notheld"
	case errors.Is(err, locker.ErrUnsupported):
		return "fail"
	}
	return "unknown"
}

func pool(addr string) *redis.Pool {
	return &redis.Pool{
		MaxIdle:     16,
		IdleTimeout: time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr, redis.DialConnectTimeout(time.Second),
				redis.DialReadTimeout(2*time.Second), redis.DialWriteTimeout(2*time.Second))
		},
	}
}

// masterPool dials the master the sentinels name at each dial, as a
// Sentinel-aware client does.
func masterPool(sentinels []string) *redis.Pool {
	p := pool("")
	p.DialContext = func(ctx context.Context) (redis.Conn, error) {
		var errs []error
		for _, s := range sentinels {
			c, err := redis.DialContext(ctx, "tcp", s, redis.DialConnectTimeout(time.Second), redis.DialReadTimeout(time.Second))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			addr, err := redis.Strings(c.Do("SENTINEL", "get-master-addr-by-name", redistest.SentinelMaster))
			c.Close()
			if err != nil || len(addr) != 2 {
				errs = append(errs, fmt.Errorf("sentinel %s: %v %v", s, addr, err))
				continue
			}
			return redis.DialContext(ctx, "tcp", net.JoinHostPort(addr[0], addr[1]), redis.DialConnectTimeout(time.Second),
				redis.DialReadTimeout(2*time.Second), redis.DialWriteTimeout(2*time.Second))
		}
		return nil, errors.Join(errs...)
	}
	return p
}

// newWorkerLocker is the Locker of a worker process; Check runs first, so
// a server the Locker refuses (an evicting maxmemory-policy) stops the
// worker before it takes anything: it prints REFUSED and exits.
func newWorkerLocker(e workerEnv, rec *recorder) *locker.Locker {
	call := min(e.lease/2, time.Second)
	opts := []locker.Option{
		locker.WithWatchdog(e.lease, e.lease/3),
		locker.WithCallTimeout(call),
		locker.WithGrantWindow(min(e.lease/4, 250*time.Millisecond)),
	}
	if e.evict {
		opts = append(opts, locker.WithEvictionAllowed())
	}
	if e.ack {
		opts = append(opts, locker.WithReplicaAck(1, 200*time.Millisecond))
	}
	var drv driver.Driver
	switch {
	case len(e.sentinels) > 0:
		drv = goredis.New(goredisclient.NewFailoverClient(&goredisclient.FailoverOptions{
			MasterName: redistest.SentinelMaster, SentinelAddrs: e.sentinels,
			DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		}))
	case len(e.cluster) > 0:
		drv = goredis.New(goredisclient.NewClusterClient(&goredisclient.ClusterOptions{
			Addrs: e.cluster, DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		}))
	default:
		drv = redigo.New(pool(e.addr), redigo.WithStallTimeout(call))
	}
	lk, err := locker.New(drv, opts...)
	if err != nil {
		fail(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := lk.Check(ctx)
		cancel()
		switch {
		case err == nil:
			return lk
		case errors.Is(err, locker.ErrEvictionPolicy):
			rec.emit(event{E: "refused", Err: err.Error(), T: rec.clk.now()})
			os.Exit(0)
		case time.Now().After(deadline):
			fail(fmt.Errorf("check: %w", err))
		}
		time.Sleep(50 * time.Millisecond) // Redis restarting under a nemesis: poll with a deadline
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "worker:", err)
	os.Exit(1)
}

// control reads the parent's commands on stdin: "pin" (keep the current
// or next critical section going until "unpin", answered with the key
// held or "-"), "unpin", and "stop" (or end of input).
type control struct {
	pinned atomic.Bool
	stop   context.CancelFunc
}

func (c *control) read(rec *recorder, holding func() string) {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case "pin":
			c.pinned.Store(true)
			rec.emit(event{E: "pin", Key: holding(), T: rec.clk.now()})
		case "unpin":
			c.pinned.Store(false)
		case "stop":
			c.stop()
			return
		}
	}
	c.stop()
}

// runLockWorker takes one of the lock keys at a time, and while it holds
// it runs read-modify-write steps on the key's register: a fenced read (it
// claims the register with the token), a pause, a write of a new unique
// value with the token, a pause. It ends a critical section after each
// step with probability 1/8 (never while pinned) or when the register
// refuses its token, then releases. It is careless on purpose: it never
// looks at the lease before a step, so only the register's fencing keeps a
// holder that lost its lock (paused, cut off, its lock lost with Redis's
// data) from corrupting it.
func runLockWorker(e workerEnv) {
	rec := newRecorder(e.epoch)
	ctx, cancel := context.WithCancel(context.Background())
	ctl := &control{stop: cancel}
	var held atomic.Value
	held.Store("-")
	var lk *locker.Locker
	var nv *naiveLock
	if e.lock == "naive" {
		p := pool(e.addr)
		if len(e.sentinels) > 0 {
			p = masterPool(e.sentinels)
		}
		nv = &naiveLock{pool: p, ttl: e.lease}
	} else {
		lk = newWorkerLocker(e, rec)
	}
	st := newStore(e.store, e.fenced)
	go ctl.read(rec, func() string { return held.Load().(string) })
	rec.emit(event{E: "ready", T: rec.clk.now()})
	rng := rand.New(rand.NewPCG(e.seed, uint64(e.client)))
	cl := e.client
	pause := func(lo, hi time.Duration) { // the workload's pacing, not synchronisation
		time.Sleep(lo + time.Duration(rng.Int64N(int64(hi-lo))))
	}
	for ctx.Err() == nil {
		key := e.keys[rng.IntN(len(e.keys))]
		id := rec.call(cl, "acquire", key, 0, 0)
		var tok int64
		var release func(context.Context) error
		valid := func() bool { return false } // the naive lock cannot tell
		var err error
		if nv != nil {
			tok, release, err = nv.obtain(ctx, key)
		} else {
			var le *locker.Lease
			le, err = lk.Obtain(ctx, key, locker.Params{Wait: e.wait})
			if err == nil {
				tok, release = le.Token(), le.Release
				valid = func() bool { return !le.Lost() }
			}
		}
		rec.ret(id, outcome(err), tok, 0, "", err)
		if err != nil {
			if outcome(err) != "busy" {
				pause(20*time.Millisecond, 60*time.Millisecond) // Redis is down: do not spin
			}
			continue
		}
		held.Store(key)
		for step := 0; ; step++ {
			id := rec.call(cl, "read", key, tok, 0)
			v, err := st.read(key, tok)
			rec.retValid(id, storeOutcome(err), tok, v, valid(), err)
			if err != nil {
				break
			}
			pause(3*time.Millisecond, 12*time.Millisecond)
			nv := int64(cl)<<40 | int64(rng.Uint32())<<8 | int64(step&0xff)
			id = rec.call(cl, "write", key, tok, nv)
			err = st.write(key, tok, nv)
			rec.retValid(id, storeOutcome(err), tok, nv, valid(), err)
			if err != nil {
				break
			}
			pause(3*time.Millisecond, 12*time.Millisecond)
			if !ctl.pinned.Load() && rng.IntN(8) == 0 || ctx.Err() != nil && !ctl.pinned.Load() {
				break
			}
		}
		held.Store("-")
		id = rec.call(cl, "release", key, tok, 0)
		rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = release(rctx)
		rcancel()
		rec.ret(id, outcome(err), tok, 0, "", err)
	}
	rec.emit(event{E: "done", T: rec.clk.now()})
}

// runIdemWorker runs idempotent requests from threads goroutines. Request
// Half of the operations are rate decisions (rateDecision) instead.
// Request keys come from a window that moves on every 400ms; one request
// in four picks a key of any earlier window (a late retry). An execution claims
// the key, checks that its claim still stands, counts itself on the
// register's Redis (INCR: the n-th execution of that key) and completes
// with n as its outcome; a replay returns the stored n.
func runIdemWorker(e workerEnv) {
	rec := newRecorder(e.epoch)
	ctx, cancel := context.WithCancel(context.Background())
	ctl := &control{stop: cancel}
	lk := newWorkerLocker(e, rec)
	sp := pool(e.store)
	go ctl.read(rec, func() string { return "-" })
	rec.emit(event{E: "ready", T: rec.clk.now()})
	prefix := e.keys[0]
	start := time.Now()
	var wg sync.WaitGroup
	for g := range e.threads {
		wg.Go(func() {
			cl := e.client + g
			rng := rand.New(rand.NewPCG(e.seed, uint64(cl)))
			for ctx.Err() == nil {
				w := int(time.Since(start) / (400 * time.Millisecond))
				if rng.IntN(4) == 0 && w > 0 {
					w = rng.IntN(w)
				}
				if rng.IntN(2) == 0 {
					// One rate key per 2s window (a fresh bucket, and a
					// history porcupine checks quickly); one decision in
					// four on an earlier window's key.
					rw := int(time.Since(start) / (2 * time.Second))
					if rng.IntN(4) == 0 && rw > 0 {
						rw = rng.IntN(rw)
					}
					rateDecision(ctx, lk, rec, cl, fmt.Sprintf("%srate%d", prefix, rw))
				} else {
					key := fmt.Sprintf("%s%d.%d", prefix, w, rng.IntN(6))
					idempotentRequest(ctx, lk, sp, rec, cl, key, e.lease)
				}
				time.Sleep(time.Duration(5+rng.IntN(15)) * time.Millisecond) // the workload's pacing
			}
		})
	}
	wg.Wait()
	rec.emit(event{E: "done", T: rec.clk.now()})
}

// idempotentRequest runs one request and records it as one operation:
// "replay" with the stored n; "exec" with n and whether the completion
// was stored (done: yes, no, unknown); "refused" when nothing executed;
// "unknown" when an execution's count is unknown.
func idempotentRequest(ctx context.Context, lk *locker.Locker, sp *redis.Pool, rec *recorder, cl int, key string, lease time.Duration) {
	id := rec.call(cl, "request", key, 0, 0)
	c, err := lk.Idempotent(ctx, key, "fp", locker.IdempotencyParams{TTL: time.Hour, Lease: lease, Name: "robustness"})
	if err != nil {
		rec.ret(id, "refused", 0, 0, "", err)
		return
	}
	if out, ok := c.Replay(); ok {
		n, perr := strconv.ParseInt(string(out), 10, 64)
		if perr != nil {
			rec.ret(id, "refused", 0, 0, "", fmt.Errorf("replayed %q: %w", out, perr))
			return
		}
		rec.ret(id, "replay", 0, n, "", nil)
		return
	}
	if err := c.Context().Err(); err != nil { // a careful executor: the claim was lost already
		_ = c.Abandon(context.Background())
		rec.ret(id, "refused", 0, 0, "", context.Cause(c.Context()))
		return
	}
	conn := sp.Get()
	n, err := redis.Int64(conn.Do("INCR", "exec:"+key))
	conn.Close()
	if err != nil {
		_ = c.Abandon(context.Background())
		rec.ret(id, "unknown", 0, 0, "", err)
		return
	}
	err = c.Complete(context.Background(), []byte(strconv.FormatInt(n, 10)))
	done := "yes"
	switch outcome(err) {
	case "ok":
	case "notheld", "fail":
		done = "no"
	default:
		done = "unknown"
	}
	rec.ret(id, "exec", 0, n, done, err)
}

// rateDecision asks Allow for one request on a rate key, under the terms
// the rate model checks, and records it: "ok" admitted, "limited"
// refused, "fail" when nothing reached Redis, "unknown" otherwise.
func rateDecision(ctx context.Context, lk *locker.Locker, rec *recorder, cl int, key string) {
	id := rec.call(cl, "allow", key, 0, 0)
	_, err := lk.Allow(ctx, key, locker.RateParams{Limit: rateLimit, Period: ratePeriod, Burst: rateBurst, Name: "robustness"})
	out := "limited"
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// Refused to the caller, but its decision may have been taken.
		out = "unknown"
	case err != nil && strings.Contains(err.Error(), "OOM command not allowed"):
		// The script's one write refused (a full server): a script
		// stops at its failing command, and rate's writes nothing before.
		out = "fail"
	case !errors.Is(err, locker.ErrRateLimited):
		out = outcome(err)
	}
	rec.ret(id, out, 0, 0, "", err)
}

// The register's errors.
var (
	errStale     = errors.New("register: stale fencing token")
	errUnclaimed = errors.New("register: token did not claim the register")
)

func storeOutcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, errStale):
		return "stale"
	case errors.Is(err, errUnclaimed):
		return "unclaimed"
	}
	return "unknown"
}

// store is the protected resource: one register per lock key, on a Redis
// of its own that no nemesis touches. Fenced, it works as locker.Fence's
// Claim and Check in one script each: a read claims the register with the
// token (refused if a larger token claimed it), a write is applied only
// while the token's claim stands. Unfenced (a control), it reads and
// writes whatever the token.
type store struct {
	pool   *redis.Pool
	fenced bool
}

func newStore(addr string, fenced bool) *store { return &store{pool: pool(addr), fenced: fenced} }

var (
	readScript = redis.NewScript(2, `local f = tonumber(redis.call('GET', KEYS[1]) or '0')
local t = tonumber(ARGV[1])
if t < f then return {-1, 0} end
redis.call('SET', KEYS[1], ARGV[1])
return {0, tonumber(redis.call('GET', KEYS[2]) or '0')}`)
	writeScript = redis.NewScript(2, `local f = tonumber(redis.call('GET', KEYS[1]) or '0')
local t = tonumber(ARGV[1])
if t < f then return -1 end
if t > f then return -2 end
redis.call('SET', KEYS[2], ARGV[2])
return 0`)
)

func (s *store) read(key string, tok int64) (int64, error) {
	c := s.pool.Get()
	defer c.Close()
	if !s.fenced {
		v, err := redis.Int64(c.Do("GET", "reg:"+key))
		if errors.Is(err, redis.ErrNil) {
			return 0, nil
		}
		return v, err
	}
	r, err := redis.Int64s(readScript.Do(c, "fence:"+key, "reg:"+key, tok))
	if err != nil {
		return 0, err
	}
	if r[0] < 0 {
		return 0, errStale
	}
	return r[1], nil
}

func (s *store) write(key string, tok, v int64) error {
	c := s.pool.Get()
	defer c.Close()
	if !s.fenced {
		_, err := c.Do("SET", "reg:"+key, v)
		return err
	}
	r, err := redis.Int(writeScript.Do(c, "fence:"+key, "reg:"+key, tok, v))
	switch {
	case err != nil:
		return err
	case r == -1:
		return errStale
	case r == -2:
		return errUnclaimed
	}
	return nil
}

// naiveLock is a control: SET NX PX with a fencing token from a counter
// (INCR) beside the lock, owner-checked release, no renewal, no queue. Its
// counter lives in Redis's memory like the lock, so a restart without
// persistence starts it again from 1.
type naiveLock struct {
	pool *redis.Pool
	ttl  time.Duration
}

var naiveAcquire = redis.NewScript(2, `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
return redis.call('INCR', KEYS[2]) end
return 0`)

var naiveRelease = redis.NewScript(1, `if redis.call('GET', KEYS[1]) == ARGV[1] then
return redis.call('DEL', KEYS[1]) end
return 0`)

func (n *naiveLock) obtain(ctx context.Context, key string) (int64, func(context.Context) error, error) {
	owner := strconv.FormatUint(rand.Uint64(), 36)
	deadline := time.Now().Add(2 * n.ttl)
	for {
		c := n.pool.Get()
		tok, err := redis.Int64(naiveAcquire.Do(c, "naive:{"+key+"}", "naive:{"+key+"}:fence", owner, n.ttl.Milliseconds()))
		c.Close()
		if err != nil {
			return 0, nil, errors.Join(locker.ErrUnavailable, err)
		}
		if tok > 0 {
			return tok, func(context.Context) error {
				c := n.pool.Get()
				defer c.Close()
				r, err := redis.Int(naiveRelease.Do(c, "naive:{"+key+"}", owner))
				if err != nil {
					return errors.Join(locker.ErrUnavailable, err)
				}
				if r == 0 {
					return locker.ErrNotHeld
				}
				return nil
			}, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, nil, locker.ErrNotObtained
		}
		time.Sleep(10 * time.Millisecond) // the naive lock polls: that is what makes it naive
	}
}
