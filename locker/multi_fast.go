package locker

import (
	"context"
	_ "embed"
	"time"

	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/names"
	"github.com/locktag/locktag/locker/internal/node"
	"github.com/locktag/locktag/locker/internal/scripts"
)

// obtainFast tries the one-script path for keys (sorted, distinct, none
// held through ctx). done is false when the caller must take the keys one
// by one: the path is off, or some key is busy and p.Wait asks to wait.
func (l *Locker) obtainFast(ctx context.Context, keys []string, p Params) (le *Lease, done bool, err error) {
	mf, ok := l.be.(node.MultiFast)
	if !ok || len(keys) < 2 {
		return nil, false, nil
	}
	for _, key := range keys {
		if heldIn(ctx, l, key, scripts.FamilyMutex) != nil {
			return nil, false, nil // re-entry goes key by key
		}
	}
	t := terms{ttl: p.TTL, wait: p.Wait, params: p}
	if t.ttl <= 0 {
		t.ttl, t.watchdog = l.o.lease, true
	}
	ns := make([]names.Names, len(keys))
	tokens := make([]string, len(keys))
	label := l.labelArg(p)
	for i, key := range keys {
		ns[i], tokens[i] = l.holder(key)
		ns[i].LabelArg = label
	}
	sent := time.Now()
	fences, ok, err := mf.TakeAll(ctx, ns, tokens, t.ttl)
	switch {
	case err != nil:
		mf.DropAll(ns, tokens, err)
		return nil, true, lockerr.ObtainFailed(ctx, err)
	case !ok && p.Wait > 0:
		return nil, false, nil
	case !ok:
		// Busy and no wait: nothing was taken, nothing to roll back. (Also
		// when the path turned out to be off: the next call goes key by key.)
		if !mf.FastOn() {
			return nil, false, nil
		}
		return nil, true, ErrNotObtained
	}
	if time.Until(sent.Add(t.ttl)) <= 0 {
		mf.DropAll(ns, tokens, nil)
		return nil, true, lockerr.Late
	}
	parts := make([]*Lease, len(keys))
	for i, key := range keys {
		parts[i] = l.newLease(ctx, new(Lease), key, ns[i], tokens[i], node.Held{Fence: fences[i], At: sent, Granted: t.ttl}, t)
	}
	return l.newMultiLease(ctx, keys, parts, p), true, nil
}
