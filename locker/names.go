package locker

import (
	"crypto/rand"
	"encoding/base64"
	"strings"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/internal/scripts"
)

// names are the Redis keys and the channel of one lock. All share the hash
// tag {key}, so they live in one Redis Cluster slot; the derived names never
// end in '}', so they cannot equal another lock's main key.
// The arguments every call of one holder passes are boxed once, in
// holder: a lock+unlock would box each twice otherwise.
type names struct {
	keys     driver.Keys  // lock, waiter queue, waiter details, and on Redlock the last token (see shared.lastKey)
	channel  string       // KEYS[1]+":c": the scripts make it themselves
	tokenArg any          // the holder's owner token as a script argument
	sc       *scripts.Set // the lock kind's scripts
	limitArg any          // acquire's extra argument: a semaphore's limit, a read/write hold's kind; nil for a mutex
	labelArg any          // acquire's last argument: the holder's label; nil for none (not sent)
	// firstArgs are acquire's arguments for the first try ('a'), and
	// releaseArgs release's (token, scripts.HandoffGrant, window), made once per
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
	firstCtx callctx.Deadline // the first try's (and a waiter's re-checks') call context, one call at a time
}

// holder returns the names of key's lock and a new owner token for it.
func (l *Locker) holder(key string) (names, string) { return l.holderIn(key, new(holderBuf)) }

// holderIn is holder with the names' storage in buf: the mutex is the kind
// whose keys have no suffix.
func (l *Locker) holderIn(key string, buf *holderBuf) (names, string) {
	return l.kindHolderIn(key, "", scripts.Mutex, nil, buf)
}

// withFirstArgs returns n with acquire's first-try arguments for terms t
// made in buf (see names.firstArgs): a semaphore's limit or a read/write
// hold's kind after the common six when it has one, n's label last when
// it has one.
func (l *Locker) withFirstArgs(n names, buf *holderBuf, t terms) names {
	buf.first = [8]any{n.tokenArg, l.msArg(t.ttl), l.msArg(t.wait), scripts.ModeAcquire, l.sidArg, l.windowArg}
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
	return l.kindHolderIn(key, ":s", scripts.Sem, int64(limit), buf)
}

// rwHolder returns the names of the read/write lock key (":rw") for a
// hold of mode m and a new owner token, with the names' storage in buf.
func (l *Locker) rwHolder(key string, m Mode, buf *holderBuf) (names, string) {
	kind := scripts.RWRead
	if m == Write {
		kind = scripts.RWWrite
	}
	return l.kindHolderIn(key, ":rw", scripts.RW, kind, buf)
}

// kindHolder returns the names of key's lock of the kind whose keys end
// in suffix and a new owner token. As
// in holder, the names and the token are slices of one string: building
// them one by one cost the uncontended semaphore pair five allocations
// more than the mutex's.
func (l *Locker) kindHolder(key, suffix string, sc *scripts.Set, arg any) (names, string) {
	return l.kindHolderIn(key, suffix, sc, arg, new(holderBuf))
}

// kindHolderIn is kindHolder with the names' storage in buf (see
// holderIn).
func (l *Locker) kindHolderIn(key, suffix string, sc *scripts.Set, arg any, buf *holderBuf) (names, string) {
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
	buf.release = [3]any{tokenArg, scripts.HandoffGrant, l.windowArg}
	return names{
		keys:        driver.KeysIn(buf.keyArgs[:], buf.keys[:nkeys]),
		channel:     part(3),
		tokenArg:    tokenArg,
		sc:          sc,
		limitArg:    arg,
		releaseArgs: buf.release[:],
	}, token
}
