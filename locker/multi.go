package locker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/protocol"
)

// MaxKeys is the most distinct keys one ObtainMany call takes: a
// multi-key lock is for a handful of resources (a transfer's two
// accounts), and every key costs a round trip while the others are held.
const MaxKeys = 16

// ErrTooManyKeys means that ObtainMany was given more than MaxKeys distinct
// keys.
var ErrTooManyKeys = lockerr.ErrTooManyKeys

// multiScripts marks a multi-key root lease: it runs no script of its own
// (each key is a mutex lease of its own, a part) and is re-entered key by
// key, through its parts.
var multiScripts = &protocol.Set{Family: protocol.FamilyMulti}

// ObtainMany takes the mutexes of every key in keys, all or nothing, and
// returns one Lease over them (a transfer between two accounts). Keys are
// deduplicated and taken in one global order, each through its own queue,
// within one wait budget p.Wait, so callers naming the same keys in any
// order cannot deadlock; on failure the keys taken are released again.
// When all are free, one script takes them in one round trip (one node,
// no driver.Masters). Each key is a lease of its own; the Lease's context
// ends when any is lost. Errors as Obtain's, and ErrTooManyKeys or
// ErrKindUnsupported (p.Limit, p.Mode). See docs/locking.md#multi-key-locks.
func (l *Locker) ObtainMany(ctx context.Context, keys []string, p Params) (*Lease, error) {
	start := time.Now()
	keys = slices.Compact(slices.Sorted(slices.Values(keys))) // one global order
	p.keys = len(keys)
	span := l.tel.startObtain(ctx)
	le, err := l.obtainMany(ctx, keys, p)
	l.tel.endObtain(span, start, strings.Join(keys, ","), p, le, err)
	return le, err
}

func (l *Locker) obtainMany(ctx context.Context, keys []string, p Params) (*Lease, error) {
	switch {
	case len(keys) == 0 || keys[0] == "":
		return nil, ErrEmptyKey
	case len(keys) > MaxKeys:
		return nil, fmt.Errorf("%w: %d distinct keys, at most %d", ErrTooManyKeys, len(keys), MaxKeys)
	}
	if p.Limit != 0 || p.Mode != Exclusive {
		return nil, fmt.Errorf("%w: a multi-key lock is a set of mutexes (no Limit, no Mode)", ErrKindUnsupported)
	}
	if err := ctx.Err(); err != nil {
		return nil, errors.Join(ErrNotObtained, err)
	}
	start := time.Now()
	if le, done, err := l.obtainFast(ctx, keys, p); done {
		return le, err
	}
	parts, err := l.obtainEach(ctx, keys, p, start)
	if err != nil {
		return nil, err
	}
	return l.newMultiLease(ctx, keys, parts, p), nil
}

// obtainEach takes keys one by one, in order. With p.Wait > 0 all keys
// share one budget from start: a later key gets what is left. On the
// first failure it releases the keys taken, last first, and returns the
// error.
func (l *Locker) obtainEach(ctx context.Context, keys []string, p Params, start time.Time) ([]*Lease, error) {
	parts := make([]*Lease, 0, len(keys))
	rollback := func() {
		for _, pt := range slices.Backward(parts) {
			_ = pt.release(context.WithoutCancel(ctx), 0)
		}
	}
	wait := p.Wait
	for _, key := range keys {
		if wait > 0 {
			if p.Wait = time.Until(start.Add(wait)); p.Wait <= 0 {
				rollback()
				return nil, ErrNotObtained
			}
		}
		pt, err := l.obtain(ctx, key, p)
		if err != nil {
			rollback()
			return nil, err
		}
		parts = append(parts, pt)
	}
	return parts, nil
}

// obtainFast tries the one-script path: every key in one round trip, when
// all are free and nobody waits for any (backend.MultiFast). done is false
// when the keys must be taken one by one: a key is held through ctx
// (re-entry goes key by key), the path is off, or some key is busy and
// p.Wait asks to wait.
func (l *Locker) obtainFast(ctx context.Context, keys []string, p Params) (le *Lease, done bool, err error) {
	mf, ok := l.be.(backend.MultiFast)
	if !ok || len(keys) < 2 || l.sh.Layout.Bridge != nil { // multi_acquire does not know a bridge's plain locks

		return nil, false, nil
	}
	for _, key := range keys {
		if heldIn(ctx, l, key, protocol.FamilyMutex) != nil {
			return nil, false, nil
		}
	}
	t := l.terms(p)
	ns := make([]protocol.Names, len(keys))
	tokens := make([]string, len(keys))
	label := l.labelArg(p)
	for i, key := range keys {
		ns[i], tokens[i] = l.sh.Layout.Mutex(key, nil)
		ns[i].LabelArg = label
	}
	sent := time.Now() // the grant's start
	fences, ok, err := mf.TakeAll(ctx, ns, tokens, t.ttl)
	switch {
	case err != nil:
		mf.DropAll(ns, tokens, err)
		return nil, true, lockerr.ObtainFailed(ctx, err)
	case !ok && (p.Wait > 0 || !mf.FastOn()):
		return nil, false, nil
	case !ok:
		return nil, true, ErrNotObtained // busy: nothing was taken
	case time.Until(sent.Add(t.ttl)) <= 0:
		mf.DropAll(ns, tokens, nil)
		return nil, true, lockerr.GrantExpired
	}
	parts := make([]*Lease, len(keys))
	for i, key := range keys {
		parts[i] = l.newLease(ctx, new(Lease), key, ns[i], tokens[i], backend.Held{Fence: fences[i], At: sent, Granted: t.ttl}, t)
	}
	return l.newMultiLease(ctx, keys, parts, p), true, nil
}

// newMultiLease builds the root lease over parts. Its keeper is stopped
// from the start (each part renews itself); a part's loss ends it.
func (l *Locker) newMultiLease(ctx context.Context, keys []string, parts []*Lease, p Params) *Lease {
	holds := parts[0].holds
	for _, pt := range parts[1:] {
		holds = min(holds, pt.holds)
	}
	le := &Lease{
		l: l, key: strings.Join(keys, ","), n: protocol.Names{Scripts: multiScripts},
		fence: parts[0].fence, holds: holds, t: l.terms(p), live: 1, parts: parts,
		parent: FromContext(ctx), base: ctx, since: time.Now(),
	}
	le.root = le
	le.kp.Stop()
	le.unwatch = make([]func() bool, len(parts))
	for i, pt := range parts {
		pctx := pt.Context()
		le.unwatch[i] = context.AfterFunc(pctx, func() {
			if cause := context.Cause(pctx); errors.Is(cause, ErrLockLost) {
				le.finish(cause, 0, nil) // the part logged why
			}
		})
	}
	return le
}

// Keys returns the keys the lease holds: for a lease of ObtainMany, its
// distinct keys in the order they were taken (ascending); for a lease of
// Obtain, its one key. The slice is a copy.
func (le *Lease) Keys() []string {
	if le == nil {
		return nil
	}
	if le.parts == nil {
		return []string{le.key}
	}
	keys := make([]string, len(le.parts))
	for i, pt := range le.parts {
		keys[i] = pt.key
	}
	return keys
}

// TokenOf returns the fencing token of key (see Token): each key of a
// multi-key lease has a counter of its own, and storage that fences writes
// to one resource must compare that resource's token. It returns 0 when
// the lease does not hold key. For a lease of Obtain, TokenOf(Key()) is
// Token().
func (le *Lease) TokenOf(key string) int64 {
	if le == nil {
		return 0
	}
	if le.parts == nil && key == le.key {
		return le.fence
	}
	for _, pt := range le.parts {
		if pt.key == key {
			return pt.fence
		}
	}
	return 0
}

// multiExtend extends every part; the first refusal or failure ends it.
func (root *Lease) multiExtend(ctx context.Context, ttl time.Duration) error {
	for _, pt := range root.parts {
		if err := pt.Extend(ctx, ttl); err != nil {
			return err
		}
	}
	root.kp.Mu.Lock()
	root.t.ttl = ttl
	root.kp.Mu.Unlock()
	return nil
}

// multiRelease releases every part at once (keep > 0: keeps each for
// keep, see ReleaseAfter); ErrNotHeld when released before.
func (root *Lease) multiRelease(ctx context.Context, keep time.Duration) error {
	root.kp.Mu.Lock()
	if root.released {
		root.kp.Mu.Unlock()
		return ErrNotHeld
	}
	root.released = true
	root.live = 0
	root.kp.Mu.Unlock()
	for _, stop := range root.unwatch {
		stop()
	}
	err := releaseAll(ctx, root.parts, keep)
	root.finish(ErrNotHeld, 0, nil)
	return err
}

// releaseAll releases every part at once: their round trips overlap (a
// pipelining driver sends them together), so a release of N keys costs
// about one round trip, not N. It returns the parts' errors, each naming
// its key's place.
func releaseAll(ctx context.Context, parts []*Lease, keep time.Duration) error {
	res := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, pt := range parts[1:] {
		wg.Go(func() { res[i+1] = pt.release(ctx, keep) })
	}
	res[0] = parts[0].release(ctx, keep)
	wg.Wait()
	var errs []error
	for i, err := range res {
		if err != nil {
			errs = append(errs, fmt.Errorf("key %d of %d: %w", i+1, len(parts), err))
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// shortestTTL is the shortest of the parts' remaining leases in Redis;
// the first error ends it.
func shortestTTL(ctx context.Context, parts []*Lease) (time.Duration, error) {
	least := time.Duration(-1)
	for _, pt := range parts {
		d, err := pt.TTL(ctx)
		if err != nil {
			return 0, err
		}
		if least < 0 || d < least {
			least = d
		}
	}
	return least, nil
}
