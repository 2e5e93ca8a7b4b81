package locker

import (
	"context"
	_ "embed"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/scripts"
)

// multiFast is the one-script path of ObtainMany: on a deployment whose
// keys all live on one node and whose scripts may name keys of several
// slots (a single server or a Sentinel set-up, not a Cluster), one round
// trip takes every lock when all are free and nobody waits for any.
// single implements it; quorum does not (each key is its own majority).
type multiFast interface {
	// takeAll runs multi_acquire.lua. ok is false, with nothing written,
	// when some lock is held or has waiters, or when the path is off
	// (err nil both times). fences are in the order of ns.
	takeAll(ctx context.Context, ns []names, tokens []string, ttl time.Duration) (fences []int64, ok bool, err error)
	// dropAll cleans up after a takeAll whose outcome is unknown (err).
	dropAll(ns []names, tokens []string, err error)
}

// oneNode is set on a single backend whose driver does not spread keys
// over masters (no driver.Masters): scripts may then span slots. It is
// cleared for good on the first CROSSSLOT error (a driver that reaches a
// Cluster without saying so).
type oneNode struct{ on atomic.Bool }

func (b *single) takeAll(ctx context.Context, ns []names, tokens []string, ttl time.Duration) ([]int64, bool, error) {
	if !b.multi.on.Load() {
		return nil, false, nil
	}
	keys := make([]string, 0, 2*len(ns))
	args := make([]any, 0, 1+len(ns))
	args = append(args, scripts.MS(ttl))
	for i, n := range ns {
		all := n.keys.Names()
		keys = append(keys, all[0], all[1]) // lock, queue
		args = append(args, tokens[i])
	}
	if ns[0].labelArg != nil {
		args = append(args, ns[0].labelArg) // one label for every key
	}
	cctx, cancel := b.o.bounds().Call(ctx)
	defer cancel()
	v, err := b.nd.drv.Eval(cctx, scripts.MultiAcquire, driver.NewKeys(keys...), args...)
	if err != nil {
		if strings.Contains(err.Error(), "CROSSSLOT") {
			b.multi.on.Store(false) // refused before it ran: nothing to clean up
			return nil, false, nil
		}
		return nil, false, err
	}
	a, ok := v.([]any)
	if !ok {
		return nil, false, nil // 0: busy
	}
	fences := make([]int64, len(a))
	for i, x := range a {
		fences[i], _ = x.(int64)
	}
	if len(fences) != len(ns) {
		return nil, false, errors.New("locker: unexpected multi_acquire reply")
	}
	return fences, true, nil
}

func (b *single) dropAll(ns []names, tokens []string, err error) {
	for i, n := range ns {
		b.abandon(n, tokens[i], err)
	}
}

// obtainFast tries the one-script path for keys (sorted, distinct, none
// held through ctx). done is false when the caller must take the keys one
// by one: the path is off, or some key is busy and p.Wait asks to wait.
func (l *Locker) obtainFast(ctx context.Context, keys []string, p Params) (le *Lease, done bool, err error) {
	mf, ok := l.be.(multiFast)
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
	ns := make([]names, len(keys))
	tokens := make([]string, len(keys))
	label := l.labelArg(p)
	for i, key := range keys {
		ns[i], tokens[i] = l.holder(key)
		ns[i].labelArg = label
	}
	sent := time.Now()
	fences, ok, err := mf.takeAll(ctx, ns, tokens, t.ttl)
	switch {
	case err != nil:
		mf.dropAll(ns, tokens, err)
		return nil, true, lockerr.ObtainFailed(ctx, err)
	case !ok && p.Wait > 0:
		return nil, false, nil
	case !ok:
		// Busy and no wait: nothing was taken, nothing to roll back. (Also
		// when the path turned out to be off: the next call goes key by key.)
		if !l.fastOn() {
			return nil, false, nil
		}
		return nil, true, ErrNotObtained
	}
	if time.Until(sent.Add(t.ttl)) <= 0 {
		mf.dropAll(ns, tokens, nil)
		return nil, true, lockerr.Late
	}
	parts := make([]*Lease, len(keys))
	for i, key := range keys {
		parts[i] = l.newLease(ctx, new(Lease), key, ns[i], tokens[i], held{fence: fences[i], at: sent, granted: t.ttl}, t)
	}
	return l.newMultiLease(ctx, keys, parts, p), true, nil
}

// fastOn reports whether the one-script path is on.
func (l *Locker) fastOn() bool {
	b, ok := l.be.(*single)
	return ok && b.multi.on.Load()
}
