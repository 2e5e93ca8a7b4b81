package backend

import (
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/internal/protocol"
)

// Config is what the engine takes from a Locker's options.
type Config struct {
	Prefix      string         // WithKeyPrefix: keys, the check's and the control channel
	Bounds      callctx.Bounds // WithCallTimeout
	Linger      time.Duration  // a channel stays subscribed this long after its last waiter
	MaxCalls    int            // WithMaxConcurrentCalls, per node; 0: unbounded
	AckReplicas int            // WithReplicaAck; 0: none
	AckTimeout  time.Duration  // WithReplicaAck
	Drift       float64        // WithDriftFactor (Redlock)
	NodeTimeout time.Duration  // WithNodeTimeout (Redlock); 0: derived from the lease
	// AllowEviction (WithEvictionAllowed): Check accepts a maxmemory-policy
	// that may evict a held lock, and reports it through Hooks.Risk.
	AllowEviction bool
}

// Hooks are how the engine tells its Locker what happens below it
// (telemetry), without importing it. A nil hook is not called.
type Hooks struct {
	// Waiting is called when an Obtain starts waiting for a busy lock,
	// with its Terms.Ref; the function it returns is called when the wait
	// ends.
	Waiting func(ref any) (done func())
	// Risk is called by Check with what it found that may break a lock's
	// guarantees but does not refuse (an accepted eviction policy, a
	// policy it cannot read); the same text comes again on every Check.
	Risk func(what string)
	// Skipped is called by Check with a replica it did not check because
	// the replica did not answer (or the replicas could not be listed):
	// no risk of its own, since a replica that is down cannot be promoted
	// with the locks' data, yet worth a line at Debug.
	Skipped func(what string)
}

// Shared is what a Locker's backend and nodes share with it.
type Shared struct {
	Cfg    Config
	Hooks  Hooks
	SID    string             // the Locker's instance id (a UUID): names its waiters in queue entries (see package hub)
	Layout protocol.KeyLayout // how this Locker names its keys
	Window time.Duration      // WithGrantWindow: how long a hand-over's grant lasts unconfirmed
	// Script arguments made once: boxing them per call would allocate.
	SIDArg, WindowArg any
	// CheckScript is check.lua under a comment naming this Locker, so
	// that its first run meets NOSCRIPT and exercises the EVAL fallback;
	// CheckCommands are its command arguments (see preflight.Check).
	CheckScript   *protocol.Call
	CheckCommands []any
	// Clock checks the server clock's readings (WithClockStepTolerance).
	Clock Clock
	// AOFOff: Check found a master with appendonly off (the Locker warns
	// once when it hands out a fencing token).
	AOFOff atomic.Bool
	// The last two millisecond arguments boxed (see MSArg).
	msBoxes [2]atomic.Pointer[msBox]
	msNext  atomic.Uint32
}

// NewShared returns what a Locker with cfg shares with its engine: a new
// instance id, the key layout (LastKey for Redlock) and the arguments
// made once.
func NewShared(cfg Config, grantWindow time.Duration, lastKey bool, hooks Hooks) *Shared {
	sh := &Shared{Cfg: cfg, Hooks: hooks, Window: grantWindow}
	sh.SID = uuid.NewString() // the Locker's instance id; it names its waiters in queue entries
	sh.SIDArg, sh.WindowArg = sh.SID, protocol.MS(grantWindow)
	sh.Layout = protocol.KeyLayout{Prefix: cfg.Prefix, LastKey: lastKey, WindowArg: sh.WindowArg, SIDArg: sh.SIDArg}
	sh.CheckScript = protocol.NewCall("check", driver.NewScript("-- check by "+sh.SID+"\n"+protocol.CheckSource))
	for _, c := range protocol.Commands() {
		sh.CheckCommands = append(sh.CheckCommands, c)
	}
	return sh
}

// Waiting reports the start of a wait for the Obtain with Terms t; call
// the function it returns when the wait ends.
func (sh *Shared) Waiting(t Terms) func() {
	if sh.Hooks.Waiting == nil {
		return func() {}
	}
	return sh.Hooks.Waiting(t.Ref)
}

// msBox is a duration in milliseconds as a script argument.
type msBox struct {
	ms  int64
	arg any
}

// MSArg returns protocol.MS(d) as a script argument. Most calls pass the
// same few values (a route's TTL and wait), so the last two boxed are
// reused: an int64 above 255 costs an allocation each time it is boxed.
func (sh *Shared) MSArg(d time.Duration) any {
	m := protocol.MS(d)
	for i := range sh.msBoxes {
		if b := sh.msBoxes[i].Load(); b != nil && b.ms == m {
			return b.arg
		}
	}
	b := &msBox{ms: m, arg: m}
	// Round robin: a TTL and a wait that alternate keep one slot each.
	sh.msBoxes[sh.msNext.Add(1)%uint32(len(sh.msBoxes))].Store(b)
	return b.arg
}
