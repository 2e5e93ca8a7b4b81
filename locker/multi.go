package locker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/locktag/locktag/locker/internal/names"
	"github.com/locktag/locktag/locker/internal/scripts"
)

// MaxKeys is the most distinct keys one ObtainMany call takes: a
// multi-key lock is for a handful of resources (a transfer's two
// accounts), and every key costs a round trip while the others are held.
const MaxKeys = 16

// ErrTooManyKeys: ObtainMany was given more than MaxKeys distinct keys.
var ErrTooManyKeys = errors.New("locker: too many keys")

// multiScripts marks a multi-key root lease (see ObtainMany): it runs no
// script of its own — each key is a mutex lease of its own (a part) — and
// no lease re-enters it as a whole (its parts are re-entered key by key).
var multiScripts = &scripts.Set{Family: scripts.FamilyMulti}

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
	keys = dedupe(keys)
	p.keys = len(keys)
	span := l.tel.startObtain(ctx)
	le, err := l.obtainMany(ctx, keys, p)
	l.tel.endObtain(span, start, strings.Join(keys, ","), p, le, err)
	return le, err
}

// dedupe returns keys sorted and without duplicates (a new slice).
func dedupe(keys []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(keys)))
}

func (l *Locker) obtainMany(ctx context.Context, keys []string, p Params) (*Lease, error) {
	switch {
	case len(keys) == 0 || keys[0] == "":
		return nil, ErrEmptyKey
	case len(keys) > MaxKeys:
		return nil, fmt.Errorf("%w: %d distinct keys, at most %d", ErrTooManyKeys, len(keys), MaxKeys)
	case p.Limit != 0 || p.Mode != Exclusive:
		return nil, fmt.Errorf("%w: a multi-key lock is a set of mutexes (no Limit, no Mode)", ErrKindUnsupported)
	}
	if err := ctx.Err(); err != nil {
		return nil, errors.Join(ErrNotObtained, err)
	}
	waitUntil := time.Now().Add(p.Wait)
	if le, done, err := l.obtainFast(ctx, keys, p); done {
		return le, err
	}
	parts := make([]*Lease, 0, len(keys))
	for _, key := range keys {
		pp := p
		if p.Wait > 0 {
			// One budget for all keys: a later key gets what is left.
			pp.Wait = time.Until(waitUntil)
			if pp.Wait <= 0 {
				l.rollback(ctx, parts)
				return nil, ErrNotObtained
			}
		}
		le, err := l.obtain(ctx, key, pp)
		if err != nil {
			l.rollback(ctx, parts)
			return nil, err
		}
		parts = append(parts, le)
	}
	return l.newMultiLease(ctx, keys, parts, p), nil
}

// rollback releases the parts taken so far by a failed ObtainMany, last
// first, on a fresh context (see Lease.release).
func (l *Locker) rollback(ctx context.Context, parts []*Lease) {
	for _, le := range slices.Backward(parts) {
		_ = le.release(context.WithoutCancel(ctx), 0)
	}
}

// newMultiLease builds the root lease over parts. It runs no timers of its
// own (its keeper is stopped from the start: each part renews itself); a
// part's loss ends it through watchParts.
func (l *Locker) newMultiLease(ctx context.Context, keys []string, parts []*Lease, p Params) *Lease {
	t := terms{ttl: p.TTL, wait: p.Wait, params: p}
	if t.ttl <= 0 {
		t.ttl, t.watchdog = l.o.lease, true
	}
	holds := parts[0].holds
	for _, pt := range parts[1:] {
		holds = min(holds, pt.holds)
	}
	le := &Lease{
		l: l, key: strings.Join(keys, ","), n: names.Names{Scripts: multiScripts},
		fence: parts[0].fence, holds: holds, t: t, live: 1, parts: parts,
		parent: FromContext(ctx), base: ctx, since: time.Now(),
	}
	le.root = le
	le.kp.Stop()
	le.watchParts()
	return le
}

// watchParts ends the multi-key root le as lost as soon as one of its
// parts is lost (its context ends with cause ErrLockLost).
func (le *Lease) watchParts() {
	le.unwatch = make([]func() bool, len(le.parts))
	for i, pt := range le.parts {
		pctx := pt.Context()
		le.unwatch[i] = context.AfterFunc(pctx, func() {
			if cause := context.Cause(pctx); errors.Is(cause, ErrLockLost) {
				le.finish(cause, 0, nil) // the part logged why
			}
		})
	}
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
	if le.parts == nil {
		if key == le.key {
			return le.fence
		}
		return 0
	}
	for _, pt := range le.parts {
		if pt.key == key {
			return pt.fence
		}
	}
	return 0
}

// multiLost reports whether a part of the multi-key root was lost.
func (root *Lease) multiLost() bool {
	for _, pt := range root.parts {
		if pt.Lost() {
			return true
		}
	}
	return false
}

// multiTTL is the shortest lease left among the parts.
func (root *Lease) multiTTL(ctx context.Context) (time.Duration, error) {
	least := time.Duration(-1)
	for _, pt := range root.parts {
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

// multiRelease releases every part (keep > 0: keeps each for keep, see
// ReleaseAfter), all at once. It returns the parts' errors joined; ErrNotHeld
// when the lease was released before.
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
	// The keys are released at once, one call each: their round trips
	// overlap (a pipelining driver sends them together), so a release of
	// N keys costs about one round trip, not N.
	res := make([]error, len(root.parts))
	var wg sync.WaitGroup
	for i, pt := range root.parts[1:] {
		wg.Go(func() { res[i+1] = pt.release(ctx, keep) })
	}
	res[0] = root.parts[0].release(ctx, keep)
	wg.Wait()
	var errs []error
	for i, err := range res {
		if err != nil {
			errs = append(errs, fmt.Errorf("key %d of %d: %w", i+1, len(root.parts), err))
		}
	}
	root.finish(ErrNotHeld, 0, nil)
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}
