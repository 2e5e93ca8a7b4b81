package protocol

import (
	"slices"

	"github.com/locktag/locktag/locker/driver"
)

// The shared functions, in order. Every script that mints a fencing
// token or refuses another protocol's record starts them with fence.lua's;
// a mutex's add value.lua's (its value), common.lua's (the queue) and
// mutex.lua's (its queue and hand-over), and last.lua's where the layout
// passes Redlock's last value (k_last); a semaphore's and a read/write
// lock's add common.lua's, sem_common.lua's and the kind's file.
var (
	mutexLib   = []string{luaFence, luaValue, luaCommon, luaMutex}
	redlockLib = []string{luaFence, luaValue, luaLast, luaCommon, luaMutex}
	semLib     = []string{luaFence, luaCommon, luaSemCommon, luaSemKind}
	rwLib      = []string{luaFence, luaCommon, luaSemCommon, luaRWKind}
)

// call is script name assembled from fragments (see assemble), run under
// its layout.
func call(name string, fragments ...string) *Call {
	return NewCall(name, script(name, fragments...))
}

// A mutex's acquire and release run their uncontended path first
// (acquire_free.lua, release.lua), so it defines no helper at all, and
// then their common busy case (acquire_busy.lua: a waiter joins the
// queue; handover.lua: a release hands the lock on).
var (
	mutexAcquire = call("mutex_acquire", slices.Concat([]string{luaAcquireFree, luaAcquireBusy}, redlockLib, []string{luaAcquire})...)
	mutexRelease = call("mutex_release", slices.Concat([]string{luaRelease, luaHandOver}, redlockLib, []string{luaReleaseHeld})...)
	mutexLeave   = call("mutex_leave", append(slices.Clone(redlockLib), luaLeave)...)
	mutexExtend  = call("mutex_extend", luaFence, luaValue, luaExtend)
	mutexPTTL    = call("mutex_pttl", luaFence, luaValue, luaPTTL)
	mutexKeep    = call("mutex_keep", append(slices.Clone(redlockLib), luaKeep)...)
)

// The semaphore's (and the read/write lock's) renewal and lease reads.
var (
	semExtend = call("sem_extend", luaFence, luaCommon, luaSemExtend)
	semPTTL   = call("sem_pttl", luaFence, luaCommon, luaSemPTTL)
)

// The operator's scripts: force-release of each kind, one lock's state,
// a SCAN step of List.
var (
	Force    = call("mutex_force", append(slices.Clone(mutexLib), luaForce)...)
	SemForce = call("sem_force", append(slices.Clone(semLib), luaSemForce)...)
	RWForce  = call("rw_force", append(slices.Clone(rwLib), luaSemForce)...)
	Inspect  = call("inspect", luaInspect)
	List     = call("list", luaList)
)

// The other scripts: Redlock's fence write-back, ObtainMany's one-script
// path, the idempotency records and the operator's read of one (with
// fence.lua's refuse), the rate limiter, and a health ping.
var (
	Raise        = call("redlock_raise", luaFence, luaValue, luaRaise)
	MultiAcquire = call("multi_acquire", luaMultiAcquire)
	IdemBegin    = call("idem_begin", luaIdemBegin)
	IdemEnd      = call("idem_end", luaIdemEnd)
	IdemRenew    = call("idem_renew", luaIdemRenew)
	IdemInspect  = call("idem_inspect", luaFence, luaIdemInspect)
	Rate         = call("rate", luaRate)
	RateInspect  = call("rate_inspect", luaRateInspect)
	Ping         = call("ping", "return 1")
)

// CheckSource is the start-up check's script (info.lua's facts, then
// check.lua, under checkLayout's prologue): Locker.Check runs it on each
// master under a comment naming the Locker, so that its first run meets
// NOSCRIPT.
var CheckSource = assemble(checkLayout.Name, luaInfo, luaCheck)

// Facts reads a replica's settings (facts.lua, with info.lua's facts).
// Its flags let a read-only replica run it, and one whose link to its
// master is down: it writes nothing and reads only INFO.
var Facts = NewCall("replica_facts", driver.NewScript("#!lua flags=no-writes,allow-stale\n"+assemble("replica_facts", luaInfo, luaFacts)))

// bridged is the mutex script name whose body (its fragments) runs as the
// body of a bridged one (bridge.lua), after lib, the mutex's shared
// functions: gate (if any) runs before it, bridge_post.lua after it.
func bridged(name string, lib, gate []string, body ...string) *Call {
	return call(name, slices.Concat(lib, []string{luaBridge}, gate, []string{"local function body()\n"}, body, []string{"\nend\n", luaBridgePost})...)
}

// MutexBridge is a mutex's scripts bridged to a plain lock
// (locker.WithPlainLockBridge): their third key, k_plain, is the plain
// lock's key. They run the mutex's general paths (the uncontended paths'
// SET NX and GETDEL do not know the plain lock) inside bridge.lua's guard.
var MutexBridge = &Set{
	Acquire:    bridged("bridge_acquire", mutexLib, []string{luaBridgeGate}, luaAcquire),
	Release:    bridged("bridge_release", redlockLib, nil, luaRelease, luaHandOver, luaReleaseHeld),
	Leave:      bridged("bridge_leave", mutexLib, nil, luaLeave),
	Extend:     bridged("bridge_extend", mutexLib, nil, luaExtend),
	PTTL:       bridged("bridge_pttl", mutexLib, nil, luaPTTL),
	Keep:       bridged("bridge_keep", mutexLib, nil, luaKeep),
	ExtendKeys: 3,
	Family:     FamilyMutex,
}

// Set is one lock kind's scripts: a holder's names carry its kind's set,
// so the backend runs the right script without asking which kind. The
// scripts of every set take the same arguments, except Acquire, to which
// a semaphore adds its limit and a read/write lock the hold's kind.
type Set struct {
	Acquire, Release, Leave, Extend, PTTL *Call
	// Keep drops a hold, keeping the lock for a while after the last
	// (Lease.ReleaseAfter); nil when the kind cannot.
	Keep *Call
	// ExtendKeys is how many of the holder's keys Extend and PTTL need.
	ExtendKeys int
	Family     int // FamilyMutex, FamilySemaphore or FamilyRW
}

var (
	// Mutex: one holder at a time (acquire.lua ...).
	Mutex = &Set{mutexAcquire, mutexRelease, mutexLeave, mutexExtend, mutexPTTL, mutexKeep, 1, FamilyMutex}
	// Sem: Params.Limit holders at a time (sem_*.lua). The uncontended
	// take and release run ahead of the shared functions
	// (sem_acquire_idle.lua, sem_release.lua): defining them is most of a
	// short call's cost.
	Sem = &Set{
		Acquire:    call("sem_acquire", slices.Concat([]string{luaSemAcquireIdle}, semLib, []string{luaSemAcquire})...),
		Release:    call("sem_release", slices.Concat([]string{luaSemIdle, luaSemRelease}, semLib, []string{luaSemReleaseQueued})...),
		Leave:      call("sem_leave", append(slices.Clone(semLib), luaSemLeave)...),
		Extend:     semExtend,
		PTTL:       semPTTL,
		ExtendKeys: 3,
		Family:     FamilySemaphore,
	}
	// RW: many readers or one writer (rw_*.lua, with the semaphore's
	// release, leave, extend and pttl); the kind is acquire's extra
	// argument.
	RW = &Set{
		Acquire:    call("rw_acquire", slices.Concat([]string{luaRWAcquireIdle}, rwLib, []string{luaRWAcquire})...),
		Release:    call("rw_release", slices.Concat([]string{luaRWIdle, luaSemRelease}, rwLib, []string{luaSemReleaseQueued})...),
		Leave:      call("rw_leave", append(slices.Clone(rwLib), luaSemLeave)...),
		Extend:     semExtend,
		PTTL:       semPTTL,
		ExtendKeys: 3,
		Family:     FamilyRW,
	}
)

// Lock families: a lease re-enters only a lease of its own family.
const (
	FamilyMutex = iota
	FamilySemaphore
	FamilyRW
	FamilyMulti // a multi-key root, re-entered only through its parts
)

// RWRead and RWWrite are rw_acquire.lua's kind argument, boxed once
// (boxing per call allocates).
var RWRead, RWWrite any = "r", "w"
