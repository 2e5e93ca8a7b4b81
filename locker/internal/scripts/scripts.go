package scripts

import "github.com/locktag/locktag/locker/driver"

// The scripts that can hand a lock over share common.lua's functions,
// after value.lua's (the lock's value, fencing); a mutex's add mutex.lua's
// (its queue and hand-over). A mutex's acquire and release run their
// uncontended path first (acquire_free.lua, release.lua), so it defines
// no helper at all, and then their common busy case (acquire_busy.lua: a
// waiter joins the queue; handover.lua: a release hands the lock on).
var (
	Acquire = driver.NewScript(luaAcquireFree + luaAcquireBusy + mutexLib + luaAcquire)
	Release = driver.NewScript(luaRelease + luaHandOver + mutexLib + luaReleaseHeld)
	Leave   = driver.NewScript(mutexLib + luaLeave)
	Extend  = driver.NewScript(luaValue + luaExtend)
	PTTL    = driver.NewScript(luaValue + luaPTTL)
	Keep    = driver.NewScript(mutexLib + luaKeep)
)

// mutexLib is the helpers of a mutex's scripts, in order.
var mutexLib = luaValue + luaCommon + luaMutex

// The semaphore's (and the read/write lock's) renewal and lease reads.
var (
	semExtend = driver.NewScript(luaValue + luaCommon + luaSemExtend)
	semPTTL   = driver.NewScript(luaValue + luaCommon + luaSemPTTL)
)

// The operator's scripts: force-release of each kind, one lock's state,
// a SCAN step of List.
var (
	Force    = driver.NewScript(mutexLib + luaForce)
	SemForce = driver.NewScript(luaValue + luaCommon + luaSemCommon + luaSemKind + luaSemForce)
	RWForce  = driver.NewScript(luaValue + luaCommon + luaSemCommon + luaRWKind + luaSemForce)
	Inspect  = driver.NewScript(luaInspect)
	List     = driver.NewScript(luaList)
)

// The other scripts: Redlock's fence write-back, ObtainMany's one-script
// path, the idempotency records and the operator's read of one (with
// value.lua's refuse), the rate limiter, and a health ping.
var (
	Raise        = driver.NewScript(luaValue + luaRaise)
	MultiAcquire = driver.NewScript(luaMultiAcquire)
	IdemBegin    = driver.NewScript(luaIdemBegin)
	IdemEnd      = driver.NewScript(luaIdemEnd)
	IdemRenew    = driver.NewScript(luaIdemRenew)
	IdemInspect  = driver.NewScript(luaValue + luaIdemInspect)
	Rate         = driver.NewScript(luaRate)
	RateInspect  = driver.NewScript(luaRateInspect)
	Ping         = driver.NewScript("return 1")
)

// CheckSource is the start-up check's script (info.lua's facts, then
// check.lua): Locker.Check runs it on each master under a comment naming
// the Locker, so that its first run meets NOSCRIPT.
var CheckSource = luaInfo + luaCheck

// Facts reads a replica's settings (facts.lua, with info.lua's facts).
// Its flags let a read-only replica run it, and one whose link to its
// master is down: it writes nothing and reads only INFO.
var Facts = driver.NewScript("#!lua flags=no-writes,allow-stale\n" + luaInfo + luaFacts)

// bridged is a mutex script run as the body of a bridged one (bridge.lua):
// gate (if any) runs before it, bridge_post.lua after it.
func bridged(gate, body string) *driver.Script {
	return driver.NewScript(mutexLib + luaBridge + gate + "local function body()\n" + body + "\nend\n" + luaBridgePost)
}

// MutexBridge is a mutex's scripts bridged to a plain lock
// (locker.WithPlainLockBridge): KEYS[3] is the plain lock's key. They run
// the mutex's general paths (the uncontended paths' SET NX and GETDEL do
// not know the plain lock) inside bridge.lua's guard.
var MutexBridge = &Set{
	Acquire:    bridged(luaBridgeGate, luaAcquire),
	Release:    bridged("", luaRelease+luaHandOver+luaReleaseHeld),
	Leave:      bridged("", luaLeave),
	Extend:     bridged("", luaExtend),
	PTTL:       bridged("", luaPTTL),
	Keep:       bridged("", luaKeep),
	ExtendKeys: 3,
	Family:     FamilyMutex,
}

// Set is one lock kind's scripts: a holder's names carry its kind's set,
// so the backend runs the right script without asking which kind. The
// scripts of every set take the same arguments, except Acquire, to which
// a semaphore adds its limit and a read/write lock the hold's kind.
type Set struct {
	Acquire, Release, Leave, Extend, PTTL *driver.Script
	// Keep drops a hold, keeping the lock for a while after the last
	// (Lease.ReleaseAfter); nil when the kind cannot.
	Keep *driver.Script
	// ExtendKeys is how many of the holder's keys Extend and PTTL need.
	ExtendKeys int
	Family     int // FamilyMutex, FamilySemaphore or FamilyRW
}

var (
	// Mutex: one holder at a time (acquire.lua ...).
	Mutex = &Set{Acquire, Release, Leave, Extend, PTTL, Keep, 1, FamilyMutex}
	// Sem: Params.Limit holders at a time (sem_*.lua). The uncontended
	// take and release run ahead of the shared functions
	// (sem_acquire_idle.lua, sem_release.lua): defining them is most of a
	// short call's cost.
	Sem = &Set{
		Acquire:    driver.NewScript(luaSemAcquireIdle + luaValue + luaCommon + luaSemCommon + luaSemKind + luaSemAcquire),
		Release:    driver.NewScript(luaSemIdle + luaSemRelease + luaValue + luaCommon + luaSemCommon + luaSemKind + luaSemReleaseQueued),
		Leave:      driver.NewScript(luaValue + luaCommon + luaSemCommon + luaSemKind + luaSemLeave),
		Extend:     semExtend,
		PTTL:       semPTTL,
		ExtendKeys: 3,
		Family:     FamilySemaphore,
	}
	// RW: many readers or one writer (rw_*.lua, with the semaphore's
	// release, leave, extend and pttl); the kind is acquire's extra
	// argument.
	RW = &Set{
		Acquire:    driver.NewScript(luaRWAcquireIdle + luaValue + luaCommon + luaSemCommon + luaRWKind + luaRWAcquire),
		Release:    driver.NewScript(luaRWIdle + luaSemRelease + luaValue + luaCommon + luaSemCommon + luaRWKind + luaSemReleaseQueued),
		Leave:      driver.NewScript(luaValue + luaCommon + luaSemCommon + luaRWKind + luaSemLeave),
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
