// The key names: the Redis keys, the channel and the owner token of one
// holder of one lock, built as slices of one string in storage the
// holder's lease lends (Buf), so a lock+unlock pays one allocation for all
// of them. Every name of a lock shares the hash tag {key}, so they live in
// one Redis Cluster slot; the derived names never end in '}', so they
// cannot equal another lock's main key. The layout is documented for
// operators in docs/locking.md.

package protocol

import (
	"crypto/rand"
	"encoding/base64"
	"strings"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/callctx"
)

// Names are the Redis keys, the channel and the script arguments of one
// holder of one lock. The arguments every call of one holder passes are
// boxed once, here: a lock+unlock would box each twice otherwise. Calls
// name them (Args): no caller knows a position.
type Names struct {
	Keys     driver.Keys // lock, waiter queue, a semaphore's or read/write lock's records (unused by a mutex), and on Redlock the last token (see KeyLayout.LastKey)
	Channel  string      // the lock's key + ":c": the scripts make it themselves
	TokenArg any         // the holder's owner token as a script argument
	Scripts  *Set        // the lock kind's scripts
	// Extra is acquire's argument of the lock's kind (a semaphore's
	// ArgLimit, a read/write hold's ArgKind) and ExtraArg
	// its value; nil for a mutex.
	Extra    Arg
	ExtraArg any
	LabelArg any // the holder's label; nil for none (not sent)
	// TTLArg, WaitArg and SIDArg are the first try's, boxed: its queue
	// entry names them, so every call about the queued token passes them
	// again (see entry in common.lua). nil for a holder made without
	// WithFirstArgs, which never queues.
	TTLArg, WaitArg, SIDArg any
	// FirstArgs are acquire's arguments for the first try ('a'), and
	// ReleaseArgs release's, made once per holder in its lease's storage
	// (Buf); nil where a holder has none (the caller builds them per
	// call). Read-only once made, so nested holds and concurrent calls
	// share them.
	FirstArgs, ReleaseArgs []any
}

// Buf is the storage a root lease lends its holder's names and its own
// calls: the keys and their boxes, the prebuilt argument lists, and the
// first try's call context. Obtain allocates the lease before the first
// call, so a lock+unlock pays one allocation for all of it instead of one
// per slice and context.
type Buf struct {
	keys     [4]string
	keyArgs  [4]any
	first    [8]any           // acquire takes at most 8 arguments (Layouts)
	release  [4]any           // release takes at most 4
	FirstCtx callctx.Deadline // the first try's (and a waiter's re-checks') call context, one call at a time
}

// KeyLayout is how one Locker names its locks.
type KeyLayout struct {
	Prefix string // WithKeyPrefix
	// LastKey: a mutex's names carry a fourth key, prefix{key}:f, where a
	// release leaves the lock for the rest of its lease, for its fencing
	// token (gone in last.lua). Set on Redlock, whose masters each mint a
	// token: the next holder's majority shares a master with the last
	// one, which must remember that token to mint a larger one whatever
	// its clock says.
	LastKey   bool
	WindowArg any // the grant window in ms, boxed once (release's third argument)
	// Bridge names a mutex's plain lock (locker.WithPlainLockBridge): its
	// names then carry it as their third key and run MutexBridge.
	// nil: no bridge.
	Bridge func(key string) string
	// SIDArg is the Locker's subscriber, boxed once: release's last
	// argument, so that a hand-over to a waiter of the same Locker is
	// woken from the reply and not told by a notice (grant in mutex.lua).
	SIDArg any
}

// Mutex returns the names of key's mutex and a new owner token, with the
// names' storage in buf (nil: allocated).
func (lay *KeyLayout) Mutex(key string, buf *Buf) (Names, string) {
	if lay.Bridge == nil {
		return lay.Kind(key, "", Mutex, 0, nil, buf)
	}
	if buf == nil {
		buf = new(Buf)
	}
	n, token := lay.Kind(key, "", MutexBridge, 0, nil, buf)
	nkeys := n.Keys.Len()
	buf.keys[2] = lay.Bridge(key)
	n.Keys = driver.KeysIn(buf.keyArgs[:], buf.keys[:nkeys])
	return n, token
}

// Semaphore returns the names of the semaphore key with limit permits and
// a new owner token. Its keys are apart from the mutex of the same key
// (":s" after the hash tag), so the two never meet in one Redis value.
func (lay *KeyLayout) Semaphore(key string, limit int, buf *Buf) (Names, string) {
	return lay.Kind(key, ":s", Sem, ArgLimit, int64(limit), buf)
}

// RW returns the names of the read/write lock key (":rw") for a read
// hold, or a write hold when write, and a new owner token.
func (lay *KeyLayout) RW(key string, write bool, buf *Buf) (Names, string) {
	kind := RWRead
	if write {
		kind = RWWrite
	}
	return lay.Kind(key, ":rw", RW, ArgKind, kind, buf)
}

// Kind returns the names of key's lock of the kind whose keys end in
// suffix, run by sc with acquire's argument extra of value arg (nil:
// none), and a new owner token. The names and the token are slices of one
// string: building them one by one costs an allocation each.
func (lay *KeyLayout) Kind(key, suffix string, sc *Set, extra Arg, arg any, buf *Buf) (Names, string) {
	if buf == nil {
		buf = new(Buf)
	}
	var b strings.Builder
	tag := len(lay.Prefix) + len(key) + 2 // prefix{key}
	n := tag + len(suffix)                // the lock's own key
	parts := [...]string{suffix, suffix + ":q", suffix + ":w", suffix + ":c", ":f"}
	count := 4 // the last token's key only where kept (LastKey)
	if lay.LastKey && suffix == "" {
		count = 5
	}
	b.Grow(n + 3*(n+2) + (tag+2)*(count-4) + tokenLen)
	var ends [6]int
	for i, part := range parts[:count] {
		b.WriteString(lay.Prefix)
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
	nm := Names{
		Keys:     driver.KeysIn(buf.keyArgs[:], buf.keys[:nkeys]),
		Channel:  part(3),
		TokenArg: tokenArg,
		Scripts:  sc,
		Extra:    extra,
		ExtraArg: arg,
	}
	if lay.WindowArg != nil {
		// One deployment's release (a layout without the window: none).
		var a Args
		a[ArgToken] = tokenArg
		a[ArgHandoff] = HandoffGrant
		a[ArgWindowMS] = lay.WindowArg
		a[ArgSID] = lay.SIDArg
		nm.ReleaseArgs = sc.Release.Append(buf.release[:0], &a)
	}
	return nm, token
}

// AcquireArgs sets in a acquire's arguments for n's holder: its token,
// the kind's argument and the label, and ttl, wait, mode, sid and window
// as given (boxed).
func (n *Names) AcquireArgs(a *Args, ttl, wait, mode, sid, window any) {
	a[ArgToken] = n.TokenArg
	a[ArgTTLMS] = ttl
	a[ArgWaitMS] = wait
	a[ArgMode] = mode
	a[ArgSID] = sid
	a[ArgWindowMS] = window
	a[ArgLabel] = n.LabelArg
	if n.ExtraArg != nil {
		a[n.Extra] = n.ExtraArg
	}
}

// WithFirstArgs returns n with acquire's first-try arguments (mode 'a')
// made in buf (see FirstArgs) and the entry its queue would name kept
// (TTLArg, WaitArg, SIDArg).
func (n Names) WithFirstArgs(buf *Buf, ttlArg, waitArg, sidArg, windowArg any) Names {
	var a Args
	n.AcquireArgs(&a, ttlArg, waitArg, AcquireNew.Arg(), sidArg, windowArg)
	n.FirstArgs = n.Scripts.Acquire.Append(buf.first[:0], &a)
	n.TTLArg, n.WaitArg, n.SIDArg = ttlArg, waitArg, sidArg
	return n
}

// EntryArgs sets in a the arguments that name n's holder's queue entry in
// a leave call: ttl, wait, sid and the label, as its first try passed
// them (each call about one queued token must pass the same, see entry in
// common.lua). Nothing for a holder without first-try arguments, which
// never queues.
func (n *Names) EntryArgs(a *Args) {
	if n.TTLArg == nil {
		return
	}
	a[ArgTTLMS] = n.TTLArg
	a[ArgWaitMS] = n.WaitArg
	a[ArgSID] = n.SIDArg
	a[ArgLabel] = n.LabelArg
}

// tokenLen is the length of an owner token: 128 bits in base64url.
const tokenLen = 22

// NewToken returns 128 random bits, base64url-encoded.
func NewToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand documents it)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
