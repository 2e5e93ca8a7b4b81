package protocol

// ProtocolVersion is the version of the Redis protocol these scripts
// speak: the keys, the values stored in them, and every script's keys,
// arguments and replies (docs/protocol.md). It is versioned on its own,
// not with the module; locker.ProtocolVersion re-exports it.
const ProtocolVersion = 1

// Field is one key or argument of a script.
type Field struct {
	Name string
	Doc  string
	// Optional: callers may leave it out (it and every field after it).
	Optional bool
}

// Layout is one script's calling convention: its keys, its arguments and
// its replies. Layouts is the one place each is defined: each script opens
// with a prologue made from it that names its keys and arguments (the
// fragments read those names, never a position: prologue.go),
// docs/protocol.md's tables are generated from it (TestProtocolDoc), and
// tests check the locker's calls (locker's TestScriptCallsMatchLayouts)
// against it.
type Layout struct {
	Name string // as in ByName
	// Keys; with Repeat, they are one group repeated once per lock.
	Keys   []Field
	Repeat bool
	// Args; with Repeat, Args[1] stands for one argument per lock.
	Args []Field
	// Replies are the reply shapes, one per case.
	Replies []string
}

// The keys most scripts take.
var (
	keyMutex   = Field{Name: "lock", Doc: "`P{name}`: the mutex's value"}
	keyQueue   = Field{Name: "queue", Doc: "`P{name}:q`: the waiter queue"}
	keyUnused  = Field{Name: "unused", Doc: "`P{name}:w`: passed, never read or written by a mutex"}
	keyLast    = Field{Name: "last", Doc: "`P{name}:f` (Redlock only): the released lock's value, kept for its token", Optional: true}
	keyPlain   = Field{Name: "plain", Doc: "the plain lock's key (WithPlainLockBridge's name for the lock): the owner's token while a locktag holder holds the mutex"}
	keySem     = Field{Name: "holders", Doc: "`P{name}:s` (read/write: `P{name}:rw`): permits zset"}
	keySemQ    = Field{Name: "queue", Doc: "`P{name}:s:q` (read/write: `P{name}:rw:q`): the waiter queue"}
	keySemRecs = Field{Name: "records", Doc: "`P{name}:s:w` (read/write: `P{name}:rw:w`): the records hash"}
	keyRecord  = Field{Name: "record", Doc: "`P{name}:r`: the idempotency record"}
	keyWaiters = Field{Name: "waiters", Doc: "`P{name}:rw`: set of waiting callers' tokens"}
	keyRate    = Field{Name: "rate", Doc: "`P{name}:rate`: the rate state"}
)

// The arguments most scripts take.
var (
	argToken  = Field{Name: "token", Doc: "the holder's owner token (22 characters of base64url)"}
	argTTL    = Field{Name: "ttl_ms", Doc: "the lease asked for"}
	argWait   = Field{Name: "wait_ms", Doc: "0: do not queue; a waiter passes its first try's on every call"}
	argMode   = Field{Name: "mode", Doc: "`a` new token, `e` re-enter, `r` re-check by a queued waiter, `n` Redlock's waiter"}
	argSID    = Field{Name: "sid", Doc: "the caller's subscriber (one per Locker)"}
	argWindow = Field{Name: "window_ms", Doc: "the grant window: a waiter of another Locker holds a grant this long until it confirms"}
	argLabel  = Field{Name: "label", Doc: "the holder's description (Params.Label); absent: none", Optional: true}
	argHand   = Field{Name: "handoff", Doc: "`g` hand the lock to the queue's head, `n` (Redlock) publish a free notice"}
	argSIDOpt = Field{Name: "sid", Doc: "the caller's subscriber: grants to its own waiters come back in the reply", Optional: true}
	argLeave  = Field{Name: "mode", Doc: "`k` keep a lock granted meanwhile, `r` release it"}
	argETTL   = Field{Name: "ttl_ms", Doc: "the waiter's queue entry, as its acquire passed it", Optional: true}
	argEWait  = Field{Name: "wait_ms", Doc: "(entry)", Optional: true}
	argESID   = Field{Name: "sid", Doc: "(entry)", Optional: true}
	argELabel = Field{Name: "label", Doc: "(entry)", Optional: true}
	argCtlCh  = Field{Name: "channel", Doc: "the control channel the holders' Lockers listen on"}
	argReason = Field{Name: "reason", Doc: "told to the holders' Lockers"}
)

// Replies shared by several scripts.
const (
	replyAcquire = "fence (integer): a free lock taken with the whole ttl"
	replyStatus  = "{status, fence, holds, pttl_ms, server_ms}: status 1 obtained, 2 re-entered, 0 busy (server_ms set when queued)"
	replyLeave   = "{status, fence, holds, pttl_ms, 0}: pttl_ms -2 when nobody holds"
	replyRelease = "holds left (>= 0); -1 not held (nothing changed)"
	replyExtend  = "the server's clock in ms: extended; 0 not held"
	replyPTTL    = "ms left; -1 not held"
	replyRefused = "error `LOCKTAG_PROTOCOL <found> 1`: a record of another protocol (nothing changed)"
)

// Layouts is every script of ByName's layout, in the order of
// docs/protocol.md.
var Layouts = []Layout{
	{Name: "mutex_acquire",
		Keys:    []Field{keyMutex, keyQueue, keyUnused, keyLast},
		Args:    []Field{argToken, argTTL, argWait, argMode, argSID, argWindow, argLabel},
		Replies: []string{replyAcquire, replyStatus, replyRefused}},
	{Name: "mutex_release",
		Keys:    []Field{keyMutex, keyQueue, keyUnused, keyLast},
		Args:    []Field{argToken, argHand, argWindow, argSIDOpt},
		Replies: []string{replyRelease, "{0, owner, fence, server_ms, pttl_ms}: handed to a waiter of the caller's subscriber (no notice published)", replyRefused}},
	{Name: "mutex_leave",
		Keys:    []Field{keyMutex, keyQueue, keyUnused, keyLast},
		Args:    []Field{argToken, argLeave, argHand, argWindow, argETTL, argEWait, argESID, argELabel},
		Replies: []string{replyLeave, replyRefused}},
	{Name: "mutex_extend",
		Keys:    []Field{keyMutex},
		Args:    []Field{argToken, argTTL},
		Replies: []string{replyExtend, replyRefused}},
	{Name: "mutex_pttl",
		Keys:    []Field{keyMutex},
		Args:    []Field{argToken},
		Replies: []string{replyPTTL, replyRefused}},
	{Name: "mutex_keep",
		Keys:    []Field{keyMutex, keyQueue, keyUnused, keyLast},
		Args:    []Field{argToken, {Name: "keep_ms", Doc: "how long the last hold keeps the lock"}},
		Replies: []string{replyRelease, replyRefused}},
	{Name: "mutex_force",
		Keys:    []Field{keyMutex, keyQueue, keyUnused},
		Args:    []Field{argCtlCh, argReason, argHand, argWindow},
		Replies: []string{"{} not held (nothing changed)", "{owner, \"fence holds granted[ label]\", grantee or '', its fence, server_ms, pttl_ms}", replyRefused}},
	{Name: "bridge_acquire",
		Keys:    []Field{keyMutex, keyQueue, keyPlain},
		Args:    []Field{argToken, argTTL, argWait, argMode, argSID, argWindow, argLabel},
		Replies: []string{replyStatus + "; busy, without queueing, while a plain locker holds the plain key (server_ms set for a waiting caller)", replyRefused}},
	{Name: "bridge_release",
		Keys:    []Field{keyMutex, keyQueue, keyPlain, {Name: "last", Doc: "Redlock's, read by mutex_release's code; never passed (a bridge is single-deployment only)", Optional: true}},
		Args:    []Field{argToken, argHand, argWindow, argSIDOpt},
		Replies: []string{"as mutex_release"}},
	{Name: "bridge_leave",
		Keys:    []Field{keyMutex, keyQueue, keyPlain},
		Args:    []Field{argToken, argLeave, argHand, argWindow, argETTL, argEWait, argESID, argELabel},
		Replies: []string{"as mutex_leave"}},
	{Name: "bridge_extend",
		Keys:    []Field{keyMutex, keyQueue, keyPlain},
		Args:    []Field{argToken, argTTL},
		Replies: []string{"as mutex_extend"}},
	{Name: "bridge_pttl",
		Keys:    []Field{keyMutex, keyQueue, keyPlain},
		Args:    []Field{argToken},
		Replies: []string{"as mutex_pttl"}},
	{Name: "bridge_keep",
		Keys:    []Field{keyMutex, keyQueue, keyPlain},
		Args:    []Field{argToken, {Name: "keep_ms", Doc: "how long the last hold keeps the lock"}},
		Replies: []string{"as mutex_keep"}},
	{Name: "sem_acquire",
		Keys:    []Field{keySem, keySemQ, keySemRecs},
		Args:    []Field{argToken, argTTL, argWait, argMode, argSID, argWindow, {Name: "limit", Doc: "the permits"}, argLabel},
		Replies: []string{replyAcquire, replyStatus, replyRefused}},
	{Name: "sem_release",
		Keys:    []Field{keySem, keySemQ, keySemRecs},
		Args:    []Field{argToken, {Name: "handoff", Doc: "unused"}, argWindow, argSIDOpt},
		Replies: []string{replyRelease, "{0, token, fence, server_ms, pttl_ms, ...}: grants to waiters of the caller's subscriber", replyRefused}},
	{Name: "sem_leave",
		Keys:    []Field{keySem, keySemQ, keySemRecs},
		Args:    []Field{argToken, argLeave, {Name: "handoff", Doc: "unused"}, argWindow, argETTL, argEWait, argESID, argELabel},
		Replies: []string{replyLeave, replyRefused}},
	{Name: "sem_extend",
		Keys:    []Field{keySem, keySemQ, keySemRecs},
		Args:    []Field{argToken, argTTL},
		Replies: []string{replyExtend, replyRefused}},
	{Name: "sem_pttl",
		Keys:    []Field{keySem, keySemQ, keySemRecs},
		Args:    []Field{argToken},
		Replies: []string{replyPTTL, replyRefused}},
	{Name: "sem_force",
		Keys:    []Field{keySem, keySemQ, keySemRecs},
		Args:    []Field{argCtlCh, argReason, {Name: "handoff", Doc: "unused"}, argWindow},
		Replies: []string{"{} nobody holds (nothing changed)", "{writer or '', then per holder: token, \"fence holds[ granted[ label]]\"}", replyRefused}},
	{Name: "rw_acquire",
		Keys:    []Field{keySem, keySemQ, keySemRecs},
		Args:    []Field{argToken, argTTL, argWait, argMode, argSID, argWindow, {Name: "kind", Doc: "`r` read, `w` write"}, argLabel},
		Replies: []string{replyAcquire, replyStatus, replyRefused}},
	{Name: "rw_release",
		Keys:    []Field{keySem, keySemQ, keySemRecs},
		Args:    []Field{argToken, {Name: "handoff", Doc: "unused"}, argWindow, argSIDOpt},
		Replies: []string{"as sem_release"}},
	{Name: "rw_leave",
		Keys:    []Field{keySem, keySemQ, keySemRecs},
		Args:    []Field{argToken, argLeave, {Name: "handoff", Doc: "unused"}, argWindow, argETTL, argEWait, argESID, argELabel},
		Replies: []string{"as sem_leave"}},
	{Name: "rw_force",
		Keys:    []Field{keySem, keySemQ, keySemRecs},
		Args:    []Field{argCtlCh, argReason, {Name: "handoff", Doc: "unused"}, argWindow},
		Replies: []string{"as sem_force"}},
	{Name: "multi_acquire",
		Keys: []Field{keyMutex, keyQueue}, Repeat: true,
		Args:    []Field{argTTL, {Name: "token...", Doc: "one owner token per lock, in KEYS order"}, argLabel},
		Replies: []string{"0: some lock held or queued for (nothing written)", "{fence, ...}: the tokens minted, in KEYS order"}},
	{Name: "redlock_raise",
		Keys:    []Field{keyMutex},
		Args:    []Field{argToken, {Name: "fence", Doc: "the token the quorum settled on"}},
		Replies: []string{"1", replyRefused}},
	{Name: "idem_begin",
		Keys:    []Field{keyRecord, keyWaiters},
		Args:    []Field{{Name: "fingerprint", Doc: "64 hex digits"}, argToken, {Name: "lease_ms", Doc: "the in-flight lease"}, {Name: "wait_ms", Doc: "0: do not register as a waiter"}},
		Replies: []string{"{1} claimed", "{2, pttl_ms} in flight", "{3} another fingerprint", "{4, record} done", replyRefused}},
	{Name: "idem_end",
		Keys:    []Field{keyRecord, keyWaiters},
		Args:    []Field{argToken, {Name: "mode", Doc: "`c` complete, `a` abandon"}, {Name: "outcome", Doc: "the stored outcome (opaque)"}, {Name: "ttl_ms", Doc: "the record's TTL"}, {Name: "channel", Doc: "`P{name}:rc`: waiters are told `token 0 0`"}},
		Replies: []string{"1 done; 0 not in flight under token (nothing changed)", replyRefused}},
	{Name: "idem_renew",
		Keys:    []Field{keyRecord},
		Args:    []Field{argToken, {Name: "lease_ms", Doc: "the new lease"}},
		Replies: []string{"1 renewed; 0 not in flight under token", replyRefused}},
	{Name: "idem_inspect",
		Keys:    []Field{keyRecord, keyWaiters},
		Replies: []string{"nil: no record", "{state, fingerprint, pttl_ms, waiting, owner}: state `p` in flight, `d` done; waiting: the tokens in `P{name}:rw` while in flight, else 0; owner: the token in flight, else '' (a done record's outcome is not returned)", replyRefused}},
	{Name: "rate",
		Keys:    []Field{keyRate},
		Args:    []Field{{Name: "interval_us", Doc: "period / N, decimal"}, {Name: "burst", Doc: "requests admitted at once"}, {Name: "max_delay_us", Doc: "0: refuse a request that does not conform now"}},
		Replies: []string{"{admitted 0|1, remaining, wait_us, reset_us}", replyRefused}},
	{Name: "rate_inspect",
		Keys:    []Field{keyRate},
		Replies: []string{"nil: no state", "{remaining, reset_us, interval_us, burst}", replyRefused}},
	{Name: "inspect",
		Keys: []Field{keyMutex, keyQueue, keyUnused,
			{Name: "sem holders", Doc: keySem.Doc}, {Name: "sem queue", Doc: keySemQ.Doc}, {Name: "sem records", Doc: keySemRecs.Doc},
			{Name: "rw holders", Doc: "`P{name}:rw`"}, {Name: "rw queue", Doc: "`P{name}:rw:q`"}, {Name: "rw records", Doc: "`P{name}:rw:w`"}},
		Args:    []Field{{Name: "max", Doc: "most waiters to return"}},
		Replies: []string{"{server_s, server_us, kind, limit, holders, (token, about, lease_ms, mode)..., queued, (token, arrival_us, details, mode)...}", replyRefused}},
	{Name: "list",
		Args:    []Field{{Name: "cursor", Doc: "SCAN cursor"}, {Name: "pattern", Doc: "MATCH"}, {Name: "count", Doc: "COUNT"}},
		Replies: []string{"{next cursor, key...}"}},
	{Name: "ping",
		Replies: []string{"1"}},
	{Name: "replica_facts",
		Replies: []string{"{0, fact...}: `=maxmemory:<bytes>`, `=policy:<maxmemory-policy>`, `=evicted:<evicted_keys>`, `=aof:<0|1>`, `~<policy>` where that policy may evict a held lock, `%aof` where appendonly is off; {0, `~?`} where INFO is refused"}},
}

// checkLayout is the start-up check's layout (CheckSource: info.lua, then
// check.lua). It is not a registered script (it carries the Locker's id),
// so it is kept apart from Layouts; its arguments have Arg constants as
// theirs do, and docs/protocol.md lists it after them.
var checkLayout = Layout{Name: "check",
	Args: []Field{{Name: "key", Doc: "a lock key under the Locker's prefix: the commands are checked on it (PUBLISH on its `:c` channel)"},
		{Name: "channel", Doc: "'' or where to publish payload (Check's pub/sub round trip)"},
		{Name: "payload", Doc: "what is published"},
		{Name: "command...", Doc: "the commands the scripts call (Commands), one argument each"}},
	Replies: []string{"{server_s, problem...}: `name` denied to this user, `name?` unknown to the server, `!version` older than Redis 7.0, `~policy` an eviction policy that may evict a held lock, `~?` INFO refused, `%aof` appendonly off; then info facts as replica_facts's `=name:value`. Not in testdata/scripts: Locker.Check runs it under a comment naming the Locker"}}

// LayoutOf returns the layout of the script registered as name.
func LayoutOf(name string) (Layout, bool) {
	for _, l := range Layouts {
		if l.Name == name {
			return l, true
		}
	}
	return Layout{}, false
}

// NameOf returns the registry name of s ("" when it is not registered).
func NameOf(s interface{ Hash() string }) string {
	for name, r := range registered() {
		if r.Hash() == s.Hash() {
			return name
		}
	}
	return ""
}
