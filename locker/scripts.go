package locker

import (
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/locktag/locktag/locker/driver"
)

var (
	//go:embed scripts/value.lua
	luaValue string
	//go:embed scripts/common.lua
	luaCommon string
	//go:embed scripts/acquire_free.lua
	luaAcquireFree string
	//go:embed scripts/acquire.lua
	luaAcquire string
	//go:embed scripts/release.lua
	luaRelease string
	//go:embed scripts/release_held.lua
	luaReleaseHeld string
	//go:embed scripts/release_handoff.lua
	luaReleaseHandoff string
	//go:embed scripts/leave.lua
	luaLeave string
	//go:embed scripts/extend.lua
	luaExtend string
	//go:embed scripts/pttl.lua
	luaPTTL string
	//go:embed scripts/keep.lua
	luaKeep string
	//go:embed scripts/sem_common.lua
	luaSemCommon string
	//go:embed scripts/sem_kind.lua
	luaSemKind string
	//go:embed scripts/rw_kind.lua
	luaRWKind string
	//go:embed scripts/rw_acquire.lua
	luaRWAcquire string
	//go:embed scripts/sem_acquire.lua
	luaSemAcquire string
	//go:embed scripts/sem_release.lua
	luaSemRelease string
	//go:embed scripts/sem_idle.lua
	luaSemIdle string
	//go:embed scripts/rw_idle.lua
	luaRWIdle string
	//go:embed scripts/sem_release_queued.lua
	luaSemReleaseQueued string
	//go:embed scripts/sem_acquire_idle.lua
	luaSemAcquireIdle string
	//go:embed scripts/rw_acquire_idle.lua
	luaRWAcquireIdle string
	//go:embed scripts/sem_leave.lua
	luaSemLeave string
	//go:embed scripts/sem_extend.lua
	luaSemExtend string
	//go:embed scripts/sem_pttl.lua
	luaSemPTTL string
)

// The scripts that can hand a lock over share common.lua's functions,
// after value.lua's (the lock's value, fencing). A mutex's acquire and
// release run their uncontended path first (acquire_free.lua,
// release.lua), so it defines no helper at all.
var (
	scriptAcquire = driver.NewScript(luaAcquireFree + luaValue + luaCommon + luaAcquire)
	scriptRelease = driver.NewScript(luaRelease + luaValue + luaReleaseHeld + luaCommon + luaReleaseHandoff)
	scriptLeave   = driver.NewScript(luaValue + luaCommon + luaLeave)
	scriptExtend  = driver.NewScript(luaExtend)
	scriptPTTL    = driver.NewScript(luaPTTL)
	scriptKeep    = driver.NewScript(luaValue + luaCommon + luaKeep)
)

// scriptSet is one lock kind's scripts: a holder's names carry its kind's
// set, so the backend runs the right script without asking which kind.
// The scripts of every set take the same arguments, except acquire, to
// which a semaphore adds its limit (see single.acquire).
type scriptSet struct {
	acquire, release, leave, extend, pttl *driver.Script
	// keep drops a hold, keeping the lock for a while after the last
	// (Lease.ReleaseAfter); nil when the kind cannot.
	keep *driver.Script
	// extendKeys is how many of the holder's keys extend and pttl need.
	extendKeys int
	family     int // familyMutex, familySemaphore or familyRW
}

var (
	// mutexScripts: one holder at a time (acquire.lua ...).
	mutexScripts = &scriptSet{scriptAcquire, scriptRelease, scriptLeave, scriptExtend, scriptPTTL, scriptKeep, 1, familyMutex}
	// semScripts: Params.Limit holders at a time (sem_*.lua). The
	// uncontended take and release run ahead of the shared functions
	// (sem_acquire_idle.lua, sem_release.lua): defining them is most of a
	// short call's cost.
	semScripts = &scriptSet{
		acquire:    driver.NewScript(luaSemAcquireIdle + luaValue + luaCommon + luaSemCommon + luaSemKind + luaSemAcquire),
		release:    driver.NewScript(luaSemIdle + luaSemRelease + luaValue + luaCommon + luaSemCommon + luaSemKind + luaSemReleaseQueued),
		leave:      driver.NewScript(luaValue + luaCommon + luaSemCommon + luaSemKind + luaSemLeave),
		extend:     semScriptsExtend,
		pttl:       semScriptsPTTL,
		extendKeys: 3,
		family:     familySemaphore,
	}
	// rwScripts: many readers or one writer (rw_*.lua, with the
	// semaphore's release, leave, extend and pttl); the kind is acquire's
	// extra argument.
	rwScripts = &scriptSet{
		acquire:    driver.NewScript(luaRWAcquireIdle + luaValue + luaCommon + luaSemCommon + luaRWKind + luaRWAcquire),
		release:    driver.NewScript(luaRWIdle + luaSemRelease + luaValue + luaCommon + luaSemCommon + luaRWKind + luaSemReleaseQueued),
		leave:      driver.NewScript(luaValue + luaCommon + luaSemCommon + luaRWKind + luaSemLeave),
		extend:     semScriptsExtend,
		pttl:       semScriptsPTTL,
		extendKeys: 3,
		family:     familyRW,
	}
)

var (
	semScriptsExtend = driver.NewScript(luaValue + luaCommon + luaSemExtend)
	semScriptsPTTL   = driver.NewScript(luaValue + luaCommon + luaSemPTTL)
)

// Lock families: a lease re-enters only a lease of its own family.
const (
	familyMutex = iota
	familySemaphore
	familyRW
	familyMulti // a multi-key root (multi.go), re-entered only through its parts
)

// Script modes (see the scripts' headers).
const (
	modeAcquire = "a" // acquire.lua: take or queue with a new token (a retried call is idempotent)
	modeReenter = "e" // acquire.lua: add a hold with a held lock's token
	modeRecheck = "r" // acquire.lua: a queued waiter asks whether it holds the lock
	modeNotify  = "n" // acquire.lua: try without queueing; a busy lock publishes a free notice on release
	modeKeep    = "k" // leave.lua: keep the lock if it was handed over
	modeDrop    = "r" // leave.lua: release the lock if it was handed over
)

// Hand-over on release (see free in common.lua).
const (
	handoffGrant  = "g" // one node: the queue's head becomes the owner
	handoffNotify = "n" // Redlock: publish a free notice, waiters try again
)

// Reply statuses of acquire.lua and leave.lua.
const (
	statusBusy      = 0
	statusObtained  = 1
	statusReentered = 2
)

// reply is acquire.lua's and leave.lua's answer.
type reply struct {
	status int64
	fence  int64
	holds  int64
	pttl   time.Duration
	server int64 // server clock, ms
	fast   bool  // the fence alone: a free lock this very call wrote
}

// parseReply reads a reply to a call that asked for ttl. A plain integer is
// the fence of a free lock taken with the whole ttl (see acquire.lua): one
// boxed integer where the array cost the client three allocations.
func parseReply(v any, ttl time.Duration) (reply, error) {
	if f, ok := v.(int64); ok {
		return reply{status: statusObtained, fence: f, holds: 1, pttl: time.Duration(ms(ttl)) * time.Millisecond, fast: true}, nil
	}
	a, ok := v.([]any)
	if !ok || len(a) != 5 {
		return reply{}, fmt.Errorf("locker: unexpected script reply %v", v)
	}
	var n [5]int64
	for i := range n {
		x, ok := a[i].(int64)
		if !ok {
			return reply{}, fmt.Errorf("locker: unexpected script reply %v", v)
		}
		n[i] = x
	}
	return reply{status: n[0], fence: n[1], holds: n[2], pttl: time.Duration(n[3]) * time.Millisecond, server: n[4]}, nil
}

// names are the Redis keys and the channel of one lock. All share the hash
// tag {key}, so they live in one Redis Cluster slot; the derived names never
// end in '}', so they cannot equal another lock's main key.
// The arguments every call of one holder passes are boxed once, in
// holder: a lock+unlock would box each twice otherwise.
type names struct {
	keys     driver.Keys // lock, waiter queue, waiter details, and on Redlock the last token (see shared.lastKey)
	channel  string      // KEYS[1]+":c": the scripts make it themselves
	tokenArg any         // the holder's owner token as a script argument
	sc       *scriptSet  // the lock kind's scripts
	limitArg any         // acquire's extra argument: a semaphore's limit, a read/write hold's kind; nil for a mutex
	labelArg any         // acquire's last argument: the holder's label; nil for none (not sent)
	// firstArgs are acquire's arguments for the first try ('a'), and
	// releaseArgs release's (token, handoffGrant, window), made once per
	// holder in its lease's storage (holderBuf); nil where a holder has
	// none (the caller builds them per call). Read-only once made, so
	// nested holds and concurrent calls share them.
	firstArgs, releaseArgs []any
}

// holderBuf is the storage a root lease lends its holder's names and its
// own calls: the keys and their boxes, the prebuilt argument lists, and
// the first try's call context. Obtain allocates the lease before the
// first call, so a lock+unlock pays one allocation for all of it where
// separate slices and contexts cost six.
type holderBuf struct {
	keys     [4]string
	keyArgs  [4]any
	first    [8]any
	release  [3]any
	firstCtx deadlineCtx // the first try's (and a waiter's re-checks') call context, one call at a time
}

// holder returns the names of key's lock and a new owner token for it.
func (l *Locker) holder(key string) (names, string) { return l.holderIn(key, new(holderBuf)) }

// holderIn is holder with the names' storage in buf: the mutex is the kind
// whose keys have no suffix.
func (l *Locker) holderIn(key string, buf *holderBuf) (names, string) {
	return l.kindHolderIn(key, "", mutexScripts, nil, buf)
}

// withFirstArgs returns n with acquire's first-try arguments for terms t
// made in buf (see names.firstArgs): a semaphore's limit or a read/write
// hold's kind after the common six when it has one, n's label last when
// it has one.
func (l *Locker) withFirstArgs(n names, buf *holderBuf, t terms) names {
	buf.first = [8]any{n.tokenArg, l.msArg(t.ttl), l.msArg(t.wait), modeAcquire, l.sidArg, l.windowArg}
	i := 6
	for _, a := range [...]any{n.limitArg, n.labelArg} {
		if a != nil {
			buf.first[i] = a
			i++
		}
	}
	n.firstArgs = buf.first[:i]
	return n
}

// semHolder returns the names of the semaphore key with limit permits and
// a new owner token, with the names' storage in buf. Its keys are apart
// from the mutex of the same key (":s" after the hash tag), so the two
// never meet in one Redis value.
func (l *Locker) semHolder(key string, limit int, buf *holderBuf) (names, string) {
	return l.kindHolderIn(key, ":s", semScripts, int64(limit), buf)
}

// rwHolder returns the names of the read/write lock key (":rw") for a
// hold of mode m and a new owner token, with the names' storage in buf.
func (l *Locker) rwHolder(key string, m Mode, buf *holderBuf) (names, string) {
	kind := rwReadArg
	if m == Write {
		kind = rwWriteArg
	}
	return l.kindHolderIn(key, ":rw", rwScripts, kind, buf)
}

// rw_acquire.lua's kind argument, boxed once (boxing per call allocates).
var rwReadArg, rwWriteArg any = "r", "w"

// kindHolder returns the names of key's lock of the kind whose keys end
// in suffix and a new owner token. As
// in holder, the names and the token are slices of one string: building
// them one by one cost the uncontended semaphore pair five allocations
// more than the mutex's.
func (l *Locker) kindHolder(key, suffix string, sc *scriptSet, arg any) (names, string) {
	return l.kindHolderIn(key, suffix, sc, arg, new(holderBuf))
}

// kindHolderIn is kindHolder with the names' storage in buf (see
// holderIn).
func (l *Locker) kindHolderIn(key, suffix string, sc *scriptSet, arg any, buf *holderBuf) (names, string) {
	var b strings.Builder
	tag := len(l.o.prefix) + len(key) + 2 // prefix{key}
	n := tag + len(suffix)                // the lock's own key
	parts := [...]string{suffix, suffix + ":q", suffix + ":w", suffix + ":c", ":f"}
	count := 4 // the last token's key only where kept (shared.lastKey)
	if l.lastKey && suffix == "" {
		count = 5
	}
	b.Grow(n + 3*(n+2) + (tag+2)*(count-4) + tokenLen)
	var ends [6]int
	for i, part := range parts[:count] {
		b.WriteString(l.o.prefix)
		b.WriteByte('{')
		b.WriteString(key)
		b.WriteByte('}')
		b.WriteString(part)
		ends[i+1] = b.Len()
	}
	var raw [16]byte
	var enc [tokenLen]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand documents it)
	base64.RawURLEncoding.Encode(enc[:], raw[:])
	b.Write(enc[:])
	all := b.String()
	part := func(i int) string { return all[ends[i]:ends[i+1]] }
	token := all[ends[count]:]
	buf.keys = [4]string{part(0), part(1), part(2)}
	nkeys := 3
	if count == 5 {
		buf.keys[3] = part(4)
		nkeys = 4
	}
	var tokenArg any = token
	buf.release = [3]any{tokenArg, handoffGrant, l.windowArg}
	return names{
		keys:        driver.KeysIn(buf.keyArgs[:], buf.keys[:nkeys]),
		channel:     part(3),
		tokenArg:    tokenArg,
		sc:          sc,
		limitArg:    arg,
		releaseArgs: buf.release[:],
	}, token
}

func ms(d time.Duration) int64 {
	m := d.Milliseconds()
	if m < 1 && d > 0 {
		m = 1
	}
	return m
}
