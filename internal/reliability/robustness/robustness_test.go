package robustness

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/reliability/faults"
)

// The suite's knobs, from the environment (make robustness passes them):
//
//	SEEDS=N       run seeds 1..N (default 1)
//	SEED=S        replay seed S only
//	DURATION=30s  length of each run (default 4s)
//	NEMESIS=a,b   only these nemeses (default all)
//	SERVERS=redis-server,valkey-server  (default redis-server, and valkey-server
//	              when on PATH and not -short)
//	LOCKTAG_ROBUSTNESS_OUT=dir  where illegal histories are saved
type settings struct {
	seeds    []uint64
	duration time.Duration
	nemeses  []nemesis
	servers  []string
	ciSize   bool // none of SEEDS, SEED, NEMESIS, SERVERS was set
}

func readSettings(t *testing.T) settings {
	var s settings
	n, d := 1, 4*time.Second
	s.ciSize = true
	for _, k := range []string{"SEEDS", "SEED", "NEMESIS", "SERVERS"} {
		if os.Getenv(k) != "" {
			s.ciSize = false
		}
	}
	if v := os.Getenv("SEEDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("SEEDS=%q: want a positive number", v)
		}
	}
	for i := 1; i <= n; i++ {
		s.seeds = append(s.seeds, uint64(i))
	}
	if v := os.Getenv("SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SEED=%q: want a number", v)
		}
		s.seeds = []uint64{seed}
	}
	if v := os.Getenv("DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 3*time.Second {
			t.Fatalf("DURATION=%q: want a duration of 3s or more", v)
		}
	}
	s.duration = d
	s.nemeses = nemeses
	if v := os.Getenv("NEMESIS"); v != "" {
		s.nemeses = nil
		for _, name := range strings.Split(v, ",") {
			n, ok := nemesisNamed(strings.TrimSpace(name))
			if !ok {
				t.Fatalf("NEMESIS=%q: unknown nemesis %q", v, name)
			}
			s.nemeses = append(s.nemeses, n)
		}
	}
	if v := os.Getenv("SERVERS"); v != "" {
		s.servers = strings.Split(v, ",")
	} else {
		s.servers = []string{redistest.ServerBinary()}
		if _, err := exec.LookPath("valkey-server"); err == nil && s.servers[0] != "valkey-server" && !testing.Short() {
			s.servers = append(s.servers, "valkey-server")
		}
	}
	return s
}

// Workers per run: lock workers (one client each) on lockKeys, and
// idempotency workers (idemThreads clients each).
const (
	lockWorkers = 3
	idemWorkers = 2
	idemThreads = 2
)

var lockKeys = []string{"k0", "k1"}

// TestRobustness runs every nemesis for every seed, on Redis and (when
// installed) Valkey: the real run must give legal histories; the control
// must give illegal ones in at least nine seeds of ten.
func TestRobustness(t *testing.T) {
	s := readSettings(t)
	t.Logf("seeds %v, %v each, nemeses %d, servers %v; illegal histories go to %s", s.seeds, s.duration, len(s.nemeses), s.servers, outDir())
	var tally tallies
	for _, srv := range s.servers {
		t.Run(srv, func(t *testing.T) {
			t.Setenv(redistest.ServerEnv, srv)
			if _, err := exec.LookPath(srv); err != nil {
				t.Skipf("%s not on PATH", srv)
			}
			for _, n := range s.nemeses {
				if n.name == "failover" && srv != s.servers[0] && s.ciSize {
					// As .ci/valkey.sh does for the library's failover trials:
					// at CI size, the Sentinel failover runs on the first
					// server only (SEEDS, SEED, NEMESIS or SERVERS run it on
					// every server).
					continue
				}
				t.Run(n.name, func(t *testing.T) {
					for _, seed := range s.seeds {
						p := schedule(n, seed, s.duration)
						t.Logf("seed %d schedule (%s, %v):\n%s", seed, n.name, s.duration, p)
						t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
							for _, control := range []bool{false, true} {
								name := "real"
								if control {
									name = "control"
								}
								t.Run(name, func(t *testing.T) {
									t.Parallel()
									r := run(t, runSpec{server: srv, nem: n, seed: seed, duration: s.duration, plan: p, control: control})
									tally.add(srv, n, r)
								})
							}
						})
					}
				})
				ctl := tally.get(srv, n.name)
				if ctl.seeds > 0 {
					t.Logf("%s %s: control (%s) illegal in %d of %d seeds", srv, n.name, n.control, ctl.controlIllegal, ctl.seeds)
					if ctl.controlIllegal*10 < 9*ctl.seeds {
						t.Errorf("%s %s: the control (%s) was illegal in only %d of %d seeds: the check cannot be trusted to fail", srv, n.name, n.control, ctl.controlIllegal, ctl.seeds)
					}
				}
			}
		})
	}
	t.Log("\n" + tally.table())
}

// TestRobustnessFailoverWithoutAck replays the failover seed that found a
// fencing token minted twice: the real lock without WithReplicaAck, whose
// lock a failover to a replica that had not caught up rolls back. Locks
// may be lost then (the lease model is not promised), but the fenced
// register must stay linearizable: the rolled-back lock's next token is
// past the server clock, above every token the old master gave.
func TestRobustnessFailoverWithoutAck(t *testing.T) {
	if testing.Short() {
		t.Skip("a Sentinel failover: not in -short runs")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server not on PATH")
	}
	t.Setenv(redistest.ServerEnv, "redis-server")
	i := slices.IndexFunc(nemeses, func(n nemesis) bool { return n.name == "failover" })
	n := nemeses[i]
	n.unpromised = []string{"lease"}
	const seed, duration = 8, 12 * time.Second
	p := schedule(n, seed, duration)
	t.Logf("seed %d schedule (failover without replica acknowledgement, %v):\n%s", seed, duration, p)
	run(t, runSpec{server: "redis-server", nem: n, seed: seed, duration: duration, plan: p, noAck: true})
}

// runSpec is one run: a nemesis's schedule for one seed, real or control.
type runSpec struct {
	server   string
	nem      nemesis
	seed     uint64
	duration time.Duration
	plan     plan
	control  bool
	noAck    bool // the real lock without WithReplicaAck (a failover)
}

func (rs runSpec) name() string {
	kind := "real"
	if rs.control {
		kind = "control"
	}
	return fmt.Sprintf("%s-%s-seed%d-%s", rs.server, rs.nem.name, rs.seed, kind)
}

// result is what one run found.
type result struct {
	spec     runSpec
	stats    stats
	faults   map[string]int
	verdicts []verdict
	refused  int // workers the guardrail refused
}

func (r result) illegalAny() bool {
	for _, v := range r.verdicts {
		if v.result == porcupine.Illegal {
			return true
		}
	}
	return false
}

// env is the servers and workers of one run.
type env struct {
	t       *testing.T
	spec    runSpec
	store   *redistest.Server
	lock    *redistest.Server    // the lock's Redis (single-server nemeses)
	sent    *redistest.Sentinels // failover
	cl      *redistest.Cluster   // migrate
	lease   time.Duration
	proxies map[int]*faults.Proxy
	h       *history
	epoch   time.Time
	mu      sync.Mutex
	workers []*worker
	clients int
	faults  map[string]int
}

func run(t *testing.T, rs runSpec) result {
	e := &env{t: t, spec: rs, h: newHistory(), epoch: time.Now(), lease: rs.nem.lease, proxies: map[int]*faults.Proxy{}, faults: map[string]int{}}
	e.store = redistest.Start(t)
	var args []string
	switch {
	case rs.nem.name == "restart-aof" && !rs.control:
		args = []string{"--appendonly", "yes", "--appendfsync", "everysec"}
	case rs.nem.name == "memory":
		policy := rs.plan.policy
		if rs.control {
			policy = rs.plan.controlPolicy
		}
		args = []string{"--maxmemory", "6mb", "--maxmemory-policy", policy}
	}
	switch rs.nem.name {
	case "failover":
		e.sent = redistest.StartSentinel(t, 1)
	case "migrate":
		e.cl = redistest.StartCluster(t, 3, 0)
	default:
		e.lock = redistest.Start(t, redistest.WithArgs(args...))
	}
	for i := range lockWorkers {
		e.start(roleLock, i)
	}
	if rs.nem.idem {
		for i := range idemWorkers {
			e.start(roleIdem, lockWorkers+i)
		}
	}
	refused := e.waitReady()
	if rs.nem.name == "memory" && !rs.control {
		policy := rs.plan.policy
		if policy == "noeviction" && refused > 0 {
			t.Errorf("the guardrail refused %d workers under noeviction", refused)
		}
		if all := len(e.live()); policy != "noeviction" && refused != all {
			t.Errorf("under maxmemory-policy %s the guardrail refused %d of %d workers; want all", policy, refused, all)
		}
	}
	start := time.Now()
	e.runSchedule(start)
	e.stopAll()
	st := e.h.stats()
	res := result{spec: rs, stats: st, faults: e.faults, refused: refused}
	for _, model := range []string{"lock", "lease", "once", "rate"} {
		if (model == "once" || model == "rate") && !rs.nem.idem {
			continue
		}
		v := e.h.check(model, true, outDir(), rs.name())
		res.verdicts = append(res.verdicts, v)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d operations (%d unknown outcome, %d locks granted, %d reads and writes refused by the fence, %d executions, %d replays, %d rate admissions, %d refusals), faults %v",
		rs.name(), st.ops, st.unknown, st.acquired, st.refusedByFence, st.executed, st.replayed, st.admitted, st.limited, e.faults)
	if refused > 0 {
		fmt.Fprintf(&b, ", %d workers refused by Check", refused)
	}
	for _, v := range res.verdicts {
		fmt.Fprintf(&b, "\n  %s model: %d operations in %d histories: %s", v.model, v.ops, v.partitions, v.result)
		if v.file != "" {
			fmt.Fprintf(&b, " — saved %s", v.file)
		}
	}
	if s := e.h.errorSummary(6); s != "" {
		fmt.Fprintf(&b, "\n  errors:%s", s)
	}
	t.Log(b.String())
	for _, v := range res.verdicts {
		if rs.control && v.result == porcupine.Illegal && slices.Contains(rs.nem.controlPromises, v.model) {
			t.Errorf("%s: the %s history is not linearizable, which even the control (%s) promises (seed %d; replay: SEED=%d NEMESIS=%s); visualisation: %s",
				rs.name(), v.model, rs.nem.control, rs.seed, rs.seed, rs.nem.name, v.file)
		}
	}
	if !rs.control {
		for _, v := range res.verdicts {
			promised := rs.nem.promises(v.model)
			switch {
			case v.result == porcupine.Illegal && promised:
				t.Errorf("%s: the %s history is not linearizable (seed %d; replay: SEED=%d NEMESIS=%s); visualisation: %s", rs.name(), v.model, rs.seed, rs.seed, rs.nem.name, v.file)
			case v.result == porcupine.Unknown && promised:
				t.Errorf("%s: the %s history could not be checked within %v", rs.name(), v.model, checkTimeout)
			}
		}
		if st.ops == 0 && refused == 0 {
			t.Errorf("%s: no operation recorded", rs.name())
		}
	}
	return res
}

// start starts worker process id in role.
func (e *env) start(role string, id int) *worker {
	e.t.Helper()
	we := workerEnv{
		store: e.store.Addr(), epoch: e.epoch.UnixNano(),
		keys: lockKeys, lease: e.lease, lock: "real", fenced: true,
		seed: e.spec.seed*1000 + uint64(id), threads: 1, wait: e.spec.nem.wait,
	}
	if we.wait == 0 {
		we.wait = 2 * e.lease
	}
	switch {
	case e.sent != nil:
		we.sentinels, we.ack = e.sent.Addrs(), !e.spec.control && !e.spec.noAck
	case e.cl != nil:
		we.cluster = e.cl.Addrs()
	default:
		we.addr = e.lock.Addr()
	}
	if role == roleIdem {
		we.keys, we.threads = []string{"req"}, idemThreads
	}
	switch e.spec.nem.name {
	case "holder", "redis-pause", "proxy":
		we.fenced = !e.spec.control
	case "restart-volatile", "failover":
		if e.spec.control {
			we.lock = "naive"
		}
	case "memory":
		we.evict = e.spec.control
	}
	if e.spec.nem.name == "proxy" {
		px, ok := e.proxies[id]
		if !ok {
			px = faults.NewProxy(e.t, e.lock.Addr())
			e.proxies[id] = px
		}
		we.addr = px.Addr()
	}
	e.mu.Lock()
	we.client = e.clients
	e.clients += we.threads
	e.mu.Unlock()
	w := &worker{id: id, role: role, env: we, pins: make(chan string, 1), ready: make(chan struct{}), gone: make(chan struct{})}
	w.child = faults.StartChild(e.t, role, we.env()...)
	go e.h.consume(w)
	e.mu.Lock()
	e.workers = append(e.workers, w)
	e.mu.Unlock()
	return w
}

// waitReady waits for every worker to be ready (or refused by Check) and
// returns how many were refused.
func (e *env) waitReady() int {
	refused := 0
	for _, w := range e.live() {
		select {
		case <-w.ready:
		case <-time.After(60 * time.Second):
			e.t.Fatalf("worker %d not ready within 60s: %s", w.id, w.child.Stderr())
		}
		if w.refused != "" {
			refused++
		}
	}
	return refused
}

func (e *env) live() []*worker {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*worker
	for _, w := range e.workers {
		if !w.dead {
			out = append(out, w)
		}
	}
	return out
}

// stopAll asks every live worker to stop and waits for its output to
// end; what it never answered becomes operations of unknown outcome.
func (e *env) stopAll() {
	for _, w := range e.live() {
		select {
		case <-w.gone:
		default:
			w.child.Send("stop")
		}
	}
	for _, w := range e.live() {
		select {
		case <-w.gone:
		case <-time.After(30 * time.Second):
			e.t.Errorf("worker %d did not stop within 30s", w.id)
			w.child.Kill()
			<-w.gone
		}
		e.h.orphan(w.id)
	}
}

// runSchedule injects the plan's faults at their times, then lets the run
// go on to its end.
func (e *env) runSchedule(start time.Time) {
	for _, f := range e.spec.plan.faults {
		if d := time.Until(start.Add(f.At)); d > 0 {
			time.Sleep(d) // the schedule's timing, not synchronisation
		}
		e.inject(f)
	}
	if d := time.Until(start.Add(e.spec.duration)); d > 0 {
		time.Sleep(d) // the run's length
	}
}

// pinned is a holder whose critical section the nemesis keeps going.
type pinned struct {
	w     *worker
	key   string
	since int64 // when it was pinned, on the suite's clock
}

// pinHolder finds a worker process that holds a lock and pins its
// critical section (it goes on until unpinned); nil if none held one
// within two leases.
func (e *env) pinHolder() *pinned { return e.pinHolderSince(0, 2*e.lease) }

// pinHolderSince is pinHolder for a holder whose acquisition was called
// after since (on the suite's clock), waiting up to within.
func (e *env) pinHolderSince(since int64, within time.Duration) *pinned {
	deadline := time.Now().Add(within)
	lease := e.lease
	for time.Now().Before(deadline) {
		hs := e.h.holding()
		for _, w := range e.live() {
			if hd, ok := hs[w.id]; !ok || w.role != roleLock || hd.at <= since {
				continue
			}
			since := int64(time.Since(e.epoch))
			w.child.Send("pin")
			select {
			case key := <-w.pins:
				if key != "-" {
					return &pinned{w: w, key: key, since: since}
				}
			case <-time.After(lease):
			}
			w.child.Send("unpin")
		}
		time.Sleep(5 * time.Millisecond) // polling the recorded history for a holder
	}
	return nil
}

// release ends the pin once another process has taken the pinned key
// over (and worked under it for a moment) or after three leases, so that
// the old holder keeps working while the new one does.
func (p *pinned) release(e *env) { p.releaseWithin(e, 3*e.lease) }

// releaseWithin is release waiting for a takeover at most within.
func (p *pinned) releaseWithin(e *env, within time.Duration) {
	if p == nil {
		return
	}
	lease := e.lease
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) && !e.h.takenOver(p.w.id, p.key, p.since) {
		time.Sleep(5 * time.Millisecond) // polling the recorded history
	}
	time.Sleep(lease / 4) // both work on: the stale one is refused, or corrupts an unfenced register
	p.w.child.Send("unpin")
}

// inject applies one fault and waits until it is over.
func (e *env) inject(f fault) {
	t := e.t
	e.faults[f.Kind]++
	switch f.Kind {
	case "pause-holder":
		p := e.pinHolder()
		if p == nil {
			e.faults["no-holder"]++
			return
		}
		p.w.child.Stop()
		time.Sleep(f.For) // the fault's length
		p.w.child.Cont()
		p.release(e) // the resumed holder goes on working, now stale
	case "kill-holder":
		var w *worker
		if p := e.pinHolder(); p != nil {
			w = p.w
		} else {
			ws := e.live()
			w = ws[rand.IntN(len(ws))]
		}
		e.mu.Lock()
		w.dead = true
		e.mu.Unlock()
		w.child.Kill()
		<-w.gone
		e.h.orphan(w.id)
		e.mu.Lock()
		id := len(e.workers)
		e.mu.Unlock()
		nw := e.start(w.role, id)
		select {
		case <-nw.ready:
		case <-time.After(60 * time.Second):
			t.Fatalf("replacement worker %d not ready within 60s: %s", id, nw.child.Stderr())
		}
	case "sigstop-redis", "client-pause":
		p := e.pinHolder()
		if f.Kind == "sigstop-redis" {
			e.lock.Freeze()
			time.Sleep(f.For) // the fault's length
			e.lock.Thaw()
		} else {
			if err := faults.ClientPause(e.lock, f.For, false); err != nil {
				t.Errorf("CLIENT PAUSE: %v", err)
			}
			time.Sleep(f.For) // the fault's length
			_ = faults.ClientUnpause(e.lock)
		}
		p.release(e) // the holder goes on working after its lock expired
	case "restart":
		p := e.pinHolder()
		e.lock.Stop()
		time.Sleep(f.For) // down time
		e.lock.Restart()
		p.release(e)
	case "blackhole":
		p := e.pinHolder()
		if p == nil {
			e.faults["no-holder"]++
			return
		}
		px := e.proxies[p.w.id]
		up, down := px.Timeout(faults.Upstream, 0), px.Timeout(faults.Downstream, 0)
		time.Sleep(f.For) // the fault's length
		px.Remove(up)
		px.Remove(down)
		p.release(e)
	case "delay":
		var names []func()
		for _, px := range e.proxies {
			n := px.Latency(faults.Downstream, 75*time.Millisecond, 50*time.Millisecond)
			names = append(names, func() { px.Remove(n) })
		}
		time.Sleep(f.For) // the fault's length
		for _, rm := range names {
			rm()
		}
	case "drop":
		var names []func()
		for _, px := range e.proxies {
			n := px.ResetPeer(faults.Upstream, 0)
			names = append(names, func() { px.Remove(n) })
		}
		time.Sleep(f.For) // the fault's length
		for _, rm := range names {
			rm()
		}
	case "pressure":
		e.fill(f.For)
	case "failover":
		e.failover(f)
	case "migrate":
		e.migrate()
	default:
		t.Fatalf("unknown fault %q", f.Kind)
	}
}

// failover cuts the replica off (SIGSTOP, its link killed on the master),
// lets the master take locks alone for f.For, kills the master, resumes
// the replica and waits for the sentinels to promote it; then restarts the
// old master, which the sentinels turn into the new master's replica. A
// holder granted its lock after the cut is pinned through it all.
func (e *env) failover(f fault) {
	t := e.t
	m := e.sent.Master(t)
	var rep *redistest.Server
	for _, d := range e.sent.Data {
		if d != m {
			rep = d
		}
	}
	cut := int64(time.Since(e.epoch))
	end := time.Now().Add(f.For)
	rep.Freeze()
	if _, err := m.Do("CLIENT", "KILL", "TYPE", "replica"); err != nil {
		t.Errorf("CLIENT KILL TYPE replica: %v", err)
	}
	p := e.pinHolderSince(cut, f.For)
	if d := time.Until(end); d > 0 {
		time.Sleep(d) // the cut's length
	}
	m.Stop()
	rep.Thaw()
	e.sent.WaitNewMaster(t, m, 60*time.Second)
	m.Restart()
	// Settled: the master the sentinels name has its replica online (on
	// a loaded machine the sentinels may fail over once more meanwhile).
	deadline := time.Now().Add(60 * time.Second)
	for !e.replicated() {
		if time.Now().After(deadline) {
			t.Fatalf("no master with its replica online within 60s after the failover")
		}
		time.Sleep(20 * time.Millisecond) // polling the servers
	}
	p.releaseWithin(e, 2*e.lease)
}

// replicated reports whether the master the first sentinel names has one
// replica online.
func (e *env) replicated() bool {
	v, err := redis.Strings(e.sent.Sentinels[0].Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", redistest.SentinelMaster))
	if err != nil || len(v) != 2 {
		return false
	}
	for _, d := range e.sent.Data {
		if d.Addr() != v[0]+":"+v[1] || !d.Running() {
			continue
		}
		info, err := redis.String(d.Do("INFO", "replication"))
		return err == nil && strings.Contains(info, "role:master") &&
			strings.Contains(info, "connected_slaves:1") && strings.Contains(info, "state=online")
	}
	return false
}

// migrate moves the slot of a held lock (or of the first lock key) to
// another master with MIGRATE while the workers run, as a reshard does;
// the control deletes the slot's keys on the old master first: a move
// that lost them.
func (e *env) migrate() {
	t := e.t
	key := lockKeys[0]
	p := e.pinHolder()
	if p != nil {
		key = p.key
	}
	slot := e.cl.KeySlot(t, "{"+key+"}")
	from := e.cl.MasterOf(t, slot)
	var to *redistest.Server
	for _, m := range e.cl.Masters(t) {
		if m != from && to == nil {
			to = m
		}
	}
	if e.spec.control {
		e.afterRenewal(from, "locktag:{"+key+"}")
		keys, err := redis.Strings(from.Do("CLUSTER", "GETKEYSINSLOT", slot, 1000))
		if err != nil {
			t.Errorf("GETKEYSINSLOT: %v", err)
		}
		for _, k := range keys {
			_, _ = from.Do("DEL", k)
		}
	}
	if err := e.cl.MoveSlot(slot, from, to, 1); err != nil {
		t.Errorf("moving slot %d: %v", slot, err)
	}
	p.releaseWithin(e, e.lease/2)
}

// afterRenewal waits (at most half a lease) until the lock key's
// remaining time jumps up — its holder's watchdog just renewed it — so
// that a fault made next has the holder's whole renewal period to show.
func (e *env) afterRenewal(srv *redistest.Server, key string) {
	deadline := time.Now().Add(e.lease / 2)
	prev := int64(-1)
	for time.Now().Before(deadline) {
		ttl, err := redis.Int64(srv.Do("PTTL", key))
		if err != nil || ttl < 0 {
			return
		}
		if prev >= 0 && ttl > prev+50 {
			return
		}
		prev = ttl
		time.Sleep(2 * time.Millisecond) // polling the key's TTL
	}
}

// fill writes 4 KiB values into database 1 of the lock's Redis for d, as
// fast as one connection can, then deletes them: memory pressure past
// maxmemory, then relief. Errors (OOM under noeviction) are expected.
func (e *env) fill(d time.Duration) {
	c, err := redis.Dial("tcp", e.lock.Addr(), redis.DialDatabase(1), redis.DialReadTimeout(5*time.Second))
	if err != nil {
		e.t.Errorf("filler: %v", err)
		return
	}
	defer c.Close()
	val := strings.Repeat("x", 4096)
	end := time.Now().Add(d)
	for i := 0; time.Now().Before(end); i++ {
		for j := range 32 {
			_ = c.Send("SET", fmt.Sprintf("fill:%d:%d", i, j), val)
		}
		if err := c.Flush(); err != nil {
			break
		}
		for range 32 {
			if _, err := c.Receive(); err != nil && !strings.Contains(err.Error(), "OOM") {
				break
			}
		}
	}
	if _, err := c.Do("FLUSHDB"); err != nil {
		e.t.Errorf("filler FLUSHDB: %v", err)
	}
}

// tallies sum results per server and nemesis.
type tallies struct {
	mu sync.Mutex
	m  map[string]*tally
	ks []string
}

type tally struct {
	server, nemesis, control string
	seeds, controlIllegal    int
	realRuns, realIllegal    int
	unpromisedIllegal        map[string]int
	faults                   map[string]int
	ops, histories           int
	refused                  int
}

func (ts *tallies) get(server, nem string) *tally {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m == nil {
		ts.m = map[string]*tally{}
	}
	k := server + "/" + nem
	tl, ok := ts.m[k]
	if !ok {
		tl = &tally{server: server, nemesis: nem, faults: map[string]int{}, unpromisedIllegal: map[string]int{}}
		ts.m[k] = tl
		ts.ks = append(ts.ks, k)
	}
	return tl
}

func (ts *tallies) add(server string, n nemesis, r result) {
	tl := ts.get(server, n.name)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	tl.control = n.control
	if r.spec.control {
		tl.seeds++
		if r.illegalAny() {
			tl.controlIllegal++
		}
		return
	}
	tl.realRuns++
	realIllegal := false
	for _, v := range r.verdicts {
		if v.result != porcupine.Illegal {
			continue
		}
		if n.promises(v.model) {
			realIllegal = true
		} else {
			tl.unpromisedIllegal[v.model]++
		}
	}
	if realIllegal {
		tl.realIllegal++
	}
	for k, v := range r.faults {
		tl.faults[k] += v
	}
	tl.ops += r.stats.ops
	for _, v := range r.verdicts {
		tl.histories += v.partitions
	}
	tl.refused += r.refused
}

func (ts *tallies) table() string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var b strings.Builder
	b.WriteString("| server | nemesis | seeds | faults injected (real runs) | operations | histories checked | illegal (real) | control | control illegal |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range ts.ks {
		tl := ts.m[k]
		var fs []string
		for _, kw := range []string{"pause-holder", "kill-holder", "sigstop-redis", "client-pause", "restart", "blackhole", "delay", "drop", "pressure", "failover", "migrate", "no-holder"} {
			if n := tl.faults[kw]; n > 0 {
				fs = append(fs, fmt.Sprintf("%s %d", kw, n))
			}
		}
		real := strconv.Itoa(tl.realIllegal)
		for _, m := range []string{"lease", "once", "rate"} {
			if n := tl.unpromisedIllegal[m]; n > 0 {
				real += fmt.Sprintf(" (%s model, not promised: %d)", m, n)
			}
		}
		if tl.refused > 0 {
			real += fmt.Sprintf("; %d workers refused by Check", tl.refused)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %d | %d | %s | %s | %d of %d |\n", tl.server, tl.nemesis, tl.realRuns,
			strings.Join(fs, ", "), tl.ops, tl.histories, real, tl.control, tl.controlIllegal, tl.seeds)
	}
	return b.String()
}
