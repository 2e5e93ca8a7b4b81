package robustness

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// A nemesis is one family of faults, with the set-up it needs, what the
// real run promises under it and the control that must break.
type nemesis struct {
	name string
	// kinds are the faults it draws, with weights; the first is always
	// the first fault of a schedule (the one its control needs).
	kinds []kindWeight
	// control says what the control run changes.
	control string
	// lease is the workers' watchdog lease (and idempotency in-flight
	// lease): short, so that faults lose locks within a run; longer than
	// a failover where one must outlive it.
	lease time.Duration
	// wait is how long a worker waits for a busy lock before it tries
	// again (0: two leases).
	wait time.Duration
	// idem: idempotency workers run too.
	idem bool
	// unpromised are the models the real run does not promise under this
	// nemesis (docs/reliability.md says why): their histories are checked
	// and reported, not failed.
	unpromised []string
	// controlPromises are the models the control run still promises: a
	// weaker configuration that must keep them (its other models are
	// expected to go illegal).
	controlPromises []string
}

type kindWeight struct {
	kind   string
	weight int
}

// nemeses, in the order they run.
var nemeses = []nemesis{
	{name: "holder", kinds: []kindWeight{{"pause-holder", 7}, {"kill-holder", 3}},
		control: "unfenced register", lease: time.Second, idem: true},
	{name: "redis-pause", kinds: []kindWeight{{"sigstop-redis", 1}, {"client-pause", 1}},
		control: "unfenced register", lease: time.Second, idem: true},
	{name: "restart-volatile", kinds: []kindWeight{{"restart", 1}},
		control: "naive lock (SET NX, INCR token)", lease: time.Second, idem: true,
		unpromised: []string{"lease", "once", "rate"}},
	// appendfsync everysec can lose the last second of acknowledged writes
	// in a crash (docs/scale-out.md, Persistence): a record completed, or a
	// lock granted, just before the kill. The register's fencing must hold.
	{name: "restart-aof", kinds: []kindWeight{{"restart", 1}},
		control: "no append-only file", lease: time.Second, idem: true,
		unpromised: []string{"lease", "once", "rate"}},
	{name: "proxy", kinds: []kindWeight{{"blackhole", 4}, {"delay", 3}, {"drop", 3}},
		control: "unfenced register", lease: time.Second, idem: true},
	{name: "memory", kinds: []kindWeight{{"pressure", 1}},
		control: "guardrail off (WithEvictionAllowed)", lease: time.Second, idem: true},
	// The control is a naive lock whose token counter the failover rolls
	// back. The real lock must keep fencing even without replica
	// acknowledgement: a rolled-back lock's next token is past the server
	// clock, above every token the old master gave (seed 8 found the old
	// master's token minted again); TestRobustnessFailoverWithoutAck runs
	// that seed.
	{name: "failover", kinds: []kindWeight{{"failover", 1}},
		control: "naive lock (SET NX, INCR token), no replica acknowledgement", lease: 6 * time.Second},
	{name: "migrate", kinds: []kindWeight{{"migrate", 1}},
		control: "the slot's keys lost in the move", lease: 4 * time.Second, wait: 100 * time.Millisecond, idem: true},
}

func (n nemesis) promises(model string) bool { return !slices.Contains(n.unpromised, model) }

func nemesisNamed(name string) (nemesis, bool) {
	for _, n := range nemeses {
		if n.name == name {
			return n, true
		}
	}
	return nemesis{}, false
}

// fault is one step of a schedule.
type fault struct {
	At   time.Duration // from the start of the run
	Kind string
	For  time.Duration // how long it lasts (down time for a restart)
}

func (f fault) String() string {
	return fmt.Sprintf("+%5.2fs %-13s for %v", f.At.Seconds(), f.Kind, f.For.Round(time.Millisecond))
}

// The maxmemory policies the memory nemesis runs under.
var (
	policies = []string{"noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random",
		"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"}
	evicting = policies[1:]
)

// plan is what a seed decides for one nemesis: its faults and, for the
// memory nemesis, the policies of the real run and of the control.
type plan struct {
	faults        []fault
	policy        string // memory: the real run's maxmemory-policy
	controlPolicy string // memory: the control's (always an evicting one)
}

func (p plan) String() string {
	var b strings.Builder
	if p.policy != "" {
		fmt.Fprintf(&b, "maxmemory-policy %s (control: %s)\n", p.policy, p.controlPolicy)
	}
	for _, f := range p.faults {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	return b.String()
}

// schedule draws the faults of nemesis n for a run of length d from seed:
// the same seed, nemesis and length give the same plan. A fault that
// loses a lock lasts 1.5 to 2.5 leases; after each fault the system gets
// one to two leases to recover before the next.
func schedule(n nemesis, seed uint64, d time.Duration) plan {
	lease := n.lease
	h := fnv.New64a()
	h.Write([]byte(n.name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	var p plan
	if n.name == "memory" {
		// Seed 1 runs noeviction, the next seven the evicting policies, and
		// so on; the control's policy always evicts.
		p.policy = policies[(seed+uint64(len(policies))-1)%uint64(len(policies))]
		p.controlPolicy = evicting[(seed+uint64(len(evicting))-1)%uint64(len(evicting))]
	}
	total := 0
	for _, k := range n.kinds {
		total += k.weight
	}
	at := between(lease/2, lease)
	for i := 0; ; i++ {
		kind := n.kinds[0].kind
		if i > 0 {
			r := rng.IntN(total)
			for _, k := range n.kinds {
				if r < k.weight {
					kind = k.kind
					break
				}
				r -= k.weight
			}
		}
		var dur time.Duration
		switch kind {
		case "pause-holder", "sigstop-redis", "client-pause", "blackhole":
			dur = between(3*lease/2, 5*lease/2)
		case "kill-holder":
			dur = 0
		case "restart":
			dur = between(0, lease/2)
		case "delay":
			dur = between(lease, 3*lease)
		case "drop":
			dur = between(lease/10, lease/2)
		case "pressure":
			dur = between(lease, 5*lease/2)
		case "failover": // the replica's link is cut this long before the master dies
			dur = between(time.Second, 3*time.Second)
		case "migrate":
			dur = 0
		}
		// Each fault must end, with a lease to spare, before the run does.
		if at+dur+lease > d && i > 0 {
			break
		}
		p.faults = append(p.faults, fault{At: at, Kind: kind, For: dur})
		at += dur + between(lease, 2*lease)
	}
	return p
}
