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
	//go:embed scripts/sem_leave.lua
	luaSemLeave string
	//go:embed scripts/sem_extend.lua
	luaSemExtend string
	//go:embed scripts/sem_pttl.lua
	luaSemPTTL string
)

// The scripts that can hand a lock over share common.lua's functions,
// after value.lua's (the lock's value, fencing). A mutex's acquire and
// release run their uncontended path between the two (acquire_free.lua,
// release.lua), so it never defines the hand-over's helpers.
var (
	scriptAcquire = driver.NewScript(luaValue + luaAcquireFree + luaCommon + luaAcquire)
	scriptRelease = driver.NewScript(luaValue + luaRelease + luaCommon + luaReleaseHandoff)
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
	// semScripts: Params.Limit holders at a time (sem_*.lua).
	semScripts = &scriptSet{
		acquire:    driver.NewScript(luaValue + luaCommon + luaSemCommon + luaSemKind + luaSemAcquire),
		release:    driver.NewScript(luaValue + luaCommon + luaSemCommon + luaSemKind + luaSemRelease),
		leave:      driver.NewScript(luaValue + luaCommon + luaSemCommon + luaSemKind + luaSemLeave),
		extend:     semScriptsExtend,
		pttl:       semScriptsPTTL,
		extendKeys: 4,
		family:     familySemaphore,
	}
	// rwScripts: many readers or one writer (rw_*.lua, with the
	// semaphore's release, leave, extend and pttl); the kind is acquire's
	// extra argument.
	rwScripts = &scriptSet{
		acquire:    driver.NewScript(luaValue + luaCommon + luaSemCommon + luaRWKind + luaRWAcquire),
		release:    driver.NewScript(luaValue + luaCommon + luaSemCommon + luaRWKind + luaSemRelease),
		leave:      driver.NewScript(luaValue + luaCommon + luaSemCommon + luaRWKind + luaSemLeave),
		extend:     semScriptsExtend,
		pttl:       semScriptsPTTL,
		extendKeys: 4,
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
}

// parseReply reads a reply to a call that asked for ttl. A plain integer is
// the fence of a free lock taken with the whole ttl (see acquire.lua): one
// boxed integer where the array cost the client three allocations.
func parseReply(v any, ttl time.Duration) (reply, error) {
	if f, ok := v.(int64); ok {
		return reply{status: statusObtained, fence: f, holds: 1, pttl: time.Duration(ms(ttl)) * time.Millisecond}, nil
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
	keys     driver.Keys // lock, fence counter, waiter queue, waiter details
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
	first    [7]any
	release  [3]any
	firstCtx deadlineCtx // the first try's (and a waiter's re-checks') call context, one call at a time
}

// holder returns the names of key's lock and a new owner token for it.
func (l *Locker) holder(key string) (names, string) { return l.holderIn(key, new(holderBuf)) }

// holderIn is holder with the names' storage in buf.
func (l *Locker) holderIn(key string, buf *holderBuf) (names, string) {
	// One allocation for the five names and the token: they are slices of
	// one string.
	var b strings.Builder
	n := len(l.o.prefix) + len(key) + 2
	b.Grow(5*n + 8 + tokenLen)
	for _, suffix := range [...]string{"", ":f", ":q", ":w", ":c"} {
		b.WriteString(l.o.prefix)
		b.WriteByte('{')
		b.WriteString(key)
		b.WriteByte('}')
		b.WriteString(suffix)
	}
	var raw [16]byte
	var enc [tokenLen]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand documents it)
	base64.RawURLEncoding.Encode(enc[:], raw[:])
	b.Write(enc[:])
	all := b.String()
	channel := all[4*n+6 : 5*n+8]
	token := all[5*n+8:]
	buf.keys = [4]string{all[:n], all[n : 2*n+2], all[2*n+2 : 3*n+4], all[3*n+4 : 4*n+6]}
	var tokenArg any = token
	buf.release = [3]any{tokenArg, handoffGrant, l.windowArg}
	return names{
		keys:        driver.KeysIn(buf.keyArgs[:], buf.keys[:]),
		channel:     channel,
		tokenArg:    tokenArg,
		sc:          mutexScripts,
		releaseArgs: buf.release[:],
	}, token
}

// withFirstArgs returns n with acquire's first-try arguments for terms t
// made in buf (see names.firstArgs), n's label last when it has one.
func (l *Locker) withFirstArgs(n names, buf *holderBuf, t terms) names {
	buf.first = [7]any{n.tokenArg, l.msArg(t.ttl), l.msArg(t.wait), modeAcquire, l.sidArg, l.windowArg, n.labelArg}
	n.firstArgs = buf.first[:6]
	if n.labelArg != nil {
		n.firstArgs = buf.first[:7]
	}
	return n
}

// semHolder returns the names of the semaphore key with limit permits and
// a new owner token. Its keys are apart from the mutex of the same key
// (":s" after the hash tag), so the two never meet in one Redis value.
func (l *Locker) semHolder(key string, limit int) (names, string) {
	return l.kindHolder(key, ":s", semScripts, int64(limit))
}

// rwHolder returns the names of the read/write lock key (":rw") for a
// hold of mode m and a new owner token.
func (l *Locker) rwHolder(key string, m Mode) (names, string) {
	kind := "r"
	if m == Write {
		kind = "w"
	}
	return l.kindHolder(key, ":rw", rwScripts, kind)
}

func (l *Locker) kindHolder(key, suffix string, sc *scriptSet, arg any) (names, string) {
	base := l.o.prefix + "{" + key + "}" + suffix
	token := newToken()
	return names{
		keys:     driver.NewKeys(base, l.o.prefix+"{"+key+"}:f", base+":q", base+":w"),
		channel:  base + ":c",
		tokenArg: token,
		sc:       sc,
		limitArg: arg,
	}, token
}

func ms(d time.Duration) int64 {
	m := d.Milliseconds()
	if m < 1 && d > 0 {
		m = 1
	}
	return m
}
