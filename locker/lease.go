package locker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/internal/keeper"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/logs"
	"github.com/locktag/locktag/locker/internal/protocol"
)

// Lease is a held lock. Its Context is cancelled with cause ErrLockLost when
// the lock is lost (renewal refused or impossible, or a fixed TTL ran out),
// and with cause ErrNotHeld after the last Release. Release every Lease,
// also on error paths (defer it): a watchdog lease is renewed until then.
// A Lease is safe for concurrent use.
type Lease struct {
	l      *Locker
	key    string
	n      protocol.Names
	token  string // owner token, shared by all holds of one root
	fence  int64
	holds  int
	root   *Lease // the outermost lease of this hold chain; itself for a root
	parent *Lease // the next lease up the context chain (any key, any Locker)
	// base is the context Context derives from: Obtain's ctx (with the
	// hold span on a root). ctx is made from it on the first call to
	// Context, under root.kp.Mu: most holders never read it, and a
	// cancelable context costs allocations and a registration with base's
	// cancellation.
	base context.Context
	ctx  context.Context // root.kp.Mu

	released bool // guarded by root.kp.Mu

	// Only used on a root; guarded by kp.Mu where noted.
	kp     keeper.Keeper           // the renewal engine; its Mu guards the fields so marked
	cancel context.CancelCauseFunc // cancels ctx with its cause; nil until ctx is made; mu
	cause  error                   // why the root ended (set with done); mu
	mode   Mode                    // a read/write hold's mode (Params.Mode of the root)
	t      terms                   // ttl guarded by mu
	live   int                     // holds of this chain not yet released; mu
	done   bool                    // lost or fully released; mu
	cap    time.Time               // a fixed lease's end (TTL after it was granted); mu
	span   any                     // the Observer's hold state (StartHold); a multi-key root has none (its parts have theirs)
	since  time.Time               // obtained

	// A multi-key root (ObtainMany): one lease per key, in the order
	// taken, and the stops of the watches that end it when one is lost.
	parts   []*Lease
	unwatch []func() bool

	// buf holds a root's names and the first try's call storage (see
	// protocol.Buf); upkeep is this lease's release context. Each is used
	// by one call at a time (Release runs once per lease), so a
	// lock+unlock allocates them with the lease instead of per call.
	buf    protocol.Buf
	upkeep callctx.UpkeepContext
}

type ctxKey struct{}

// FromContext returns the innermost lease carried by ctx, or nil.
func FromContext(ctx context.Context) *Lease {
	le, _ := ctx.Value(ctxKey{}).(*Lease)
	return le
}

// heldIn returns the live root lease of l for key in the lock family
// (protocol.FamilyMutex ...) carried by ctx, or nil.
func heldIn(ctx context.Context, l *Locker, key string, family int) *Lease {
	for le := FromContext(ctx); le != nil; le = le.parent {
		if le.parts != nil {
			// A multi-key lease is re-entered key by key, through its parts.
			for _, pt := range le.parts {
				if root := pt.holding(l, key, family); root != nil {
					return root
				}
			}
			continue
		}
		if root := le.holding(l, key, family); root != nil {
			return root
		}
	}
	return nil
}

// holding returns le's live root if le is l's lease of key in family.
func (le *Lease) holding(l *Locker, key string, family int) *Lease {
	if le.l != l || le.key != key || le.n.Scripts.Family != family {
		return nil
	}
	root := le.root
	root.kp.Mu.Lock()
	done := root.done
	root.kp.Mu.Unlock()
	if done {
		return nil
	}
	return root
}

// newLease builds root lease le (allocated by Obtain: its buf holds n's
// storage) for grant h; keeper.Schedule says when it is renewed.
func (l *Locker) newLease(ctx context.Context, le *Lease, key string, n protocol.Names, token string, h backend.Held, t terms) *Lease {
	le.l, le.key, le.n, le.token, le.fence, le.holds, le.t, le.live, le.mode = l, key, n, token, h.Fence, 1, t, 1, t.params.Mode
	if !t.watchdog {
		le.cap = h.At.Add(t.ttl)
	}
	le.root = le
	le.parent = FromContext(ctx)
	le.since = time.Now()
	le.base, le.span = l.tel.startHold(ctx, key, t.params, h.Fence)
	first, every := keeper.Schedule(h.At, h.Granted, t.ttl, t.watchdog, l.o.renewEvery)
	le.kp.Start((*leaseOwner)(le), l.be.ValidUntil(h.At, h.Granted), first, every, keeper.RetryAfter(l.o.renewEvery), true)
	if first > 0 {
		// Renewed: a force-release notice stops the renewals (a lease
		// never renewed is tracked once it has a context to cancel).
		l.track(le)
	}
	return le
}

// reenter adds a hold to root for a nested Obtain with ctx.
func (l *Locker) reenter(ctx context.Context, root *Lease, p Params) (*Lease, error) {
	ttl := p.TTL
	if ttl <= 0 {
		root.kp.Mu.Lock()
		ttl = root.t.ttl
		root.kp.Mu.Unlock()
	}
	holds, ok, err := l.be.Reenter(ctx, root.n, root.token, ttl)
	if err != nil {
		return nil, lockerr.ObtainFailed(ctx, err)
	}
	if !ok {
		// The outer hold is gone: it was lost.
		return nil, errors.Join(ErrNotObtained, ErrLockLost)
	}
	le := &Lease{l: l, key: root.key, n: root.n, token: root.token, fence: root.fence, holds: holds, root: root, parent: FromContext(ctx), base: ctx}
	root.kp.Mu.Lock()
	root.live++
	root.kp.Mu.Unlock()
	return le, nil
}

// Key is the lock's name as passed to Obtain ("" for a nil Lease); for a
// lease of ObtainMany, its keys joined with commas (see Keys).
func (le *Lease) Key() string {
	if le == nil {
		return ""
	}
	return le.key
}

// Token is the fencing token: it is larger than the token of every earlier
// holder of this key, so storage that remembers the largest token it has
// seen can refuse writes from a holder that lost the lock (see Fence).
// Nested holds share their root's token. A nil Lease (a handler run
// fail-open without a lock) has token 0.
func (le *Lease) Token() int64 {
	if le == nil {
		return 0
	}
	if le.l != nil && le.l.sh.AOFOff.Load() {
		le.l.risk(riskVolatileFence)
	}
	return le.fence
}

// Holds is the hold count this lease brought the lock to: 1 for the first
// hold, 2 for a nested Obtain inside it, and so on; 0 for a nil Lease.
func (le *Lease) Holds() int {
	if le == nil {
		return 0
	}
	return le.holds
}

// Context returns a context that carries the lease (see FromContext; a
// nested Obtain with it re-enters the lock) and is cancelled with cause
// ErrLockLost if the lock is lost. Use it for the work the lock protects.
// Its Err reads the lease's deadline as Lost does: after a pause past the
// lease it reports the loss at once, where Done closes when the process's
// timers next run.
func (le *Lease) Context() context.Context {
	root := le.root
	root.kp.Mu.Lock()
	defer root.kp.Mu.Unlock()
	if le.ctx != nil {
		return le.ctx
	}
	if le != root {
		// A nested hold's context is its Obtain's, which carries (and is
		// cancelled with) the outer hold's.
		le.ctx = context.WithValue(le.base, ctxKey{}, le)
		return le.ctx
	}
	cctx, cancel := context.WithCancelCause(le.base)
	le.ctx = &leaseContext{Context: context.WithValue(cctx, ctxKey{}, le), root: le}
	// The context is cancelled when the lease ends, also by running out.
	le.kp.ArmExpiryLocked()
	switch {
	case le.done:
		// Ended before anyone asked: the context is born cancelled.
		cancel(le.cause)
	case le.l.closed.Load():
		// Asked for while the Locker shuts down: the holder is told to
		// stop, as those asked for before were (Shutdown).
		le.cancel = cancel
		le.l.track(le)
		cancel(errShutDown)
	default:
		le.cancel = cancel
		le.l.track(le) // a force-release notice cancels it
	}
	return le.ctx
}

// Lost reports whether the lock was lost before it was released. A lease
// whose local deadline has passed without a confirmed renewal is lost from
// that instant, also in a process that was paused past it and has not run
// its timers yet: Lost then ends the lease itself (its context is
// cancelled with cause ErrLockLost) before it answers.
func (le *Lease) Lost() bool {
	root := le.root
	for _, pt := range root.parts {
		if pt.Lost() {
			return true
		}
	}
	root.kp.Mu.Lock()
	lost := errors.Is(root.cause, ErrLockLost)
	overdue, lastErr := root.kp.OverdueLocked()
	overdue = overdue && !root.done
	root.kp.Mu.Unlock()
	if overdue {
		root.lose(keeper.Expired, lastErr)
		return true
	}
	return lost
}

// leaseContext is a root lease's context (Lease.Context). Its Err reads
// the lease's deadline first, so a process that resumes after a pause past
// its lease is told the lock is lost by the first Err, not only once its
// timers have run. Done, Value and Deadline are the wrapped context's;
// contexts derived from it are cancelled with it.
type leaseContext struct {
	context.Context
	root *Lease
}

// Err returns the context's error, after ending the lease if it ran out
// (see Lease.Lost). When Lost reports the loss, the cancellation that
// follows it (after the loss is logged) is waited for, so that Err and
// Done agree.
func (c *leaseContext) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if c.root.Lost() {
		<-c.Context.Done()
	}
	return c.Context.Err()
}

// TTL returns the remaining lease in Redis, or ErrNotHeld.
func (le *Lease) TTL(ctx context.Context) (time.Duration, error) {
	if le.root.parts != nil {
		return shortestTTL(ctx, le.root.parts)
	}
	return le.l.be.PTTL(ctx, le.n, le.token)
}

// Extend resets the lease in Redis to ttl from now and moves the local
// deadline with it. A watchdog lease keeps being renewed afterwards.
func (le *Lease) Extend(ctx context.Context, ttl time.Duration) error {
	root := le.root
	if root.parts != nil {
		return root.multiExtend(ctx, ttl)
	}
	sent := time.Now()
	ok, err := (*leaseOwner)(root).ExtendLease(ctx, ttl)
	if step, is := err.(*keeper.StepError); is {
		root.lose(keeper.Stepped, step.Err)
		return step.Err
	}
	if err != nil {
		return err
	}
	if !ok {
		root.lose(keeper.ExtendRefused, nil)
		return ErrNotHeld
	}
	root.kp.Mu.Lock()
	defer root.kp.Mu.Unlock()
	if root.done {
		return ErrNotHeld
	}
	root.t.ttl = ttl
	if !root.t.watchdog {
		root.cap = sent.Add(ttl)
	}
	root.kp.SetDeadlineLocked(root.l.be.ValidUntil(sent, ttl))
	return nil
}

// logLock is what le's log records say of its lock.
func (le *Lease) logLock() logs.Lock {
	root := le.root
	p := root.t.params
	return logs.Lock{Name: p.Name, Template: p.Template, Key: le.key, Fence: le.fence, Watchdog: root.t.watchdog, Since: root.since}
}

// lose marks the lock lost and logs why, once.
func (root *Lease) lose(why keeper.Loss, lastErr error) {
	if why == keeper.Stepped {
		root.finish(errSteppedLost, why, lastErr)
		return
	}
	root.finish(ErrLockLost, why, lastErr)
}

// errSteppedLost is the cause of a lease ended because the server's
// clock stepped: it matches ErrLockLost and ErrClockStep.
var errSteppedLost = fmt.Errorf("%w: %w", ErrLockLost, ErrClockStep)

// leaseOwner is a root Lease as its keeper's Owner: the keeper's calls
// stay off Lease's exported method set, and the conversion allocates
// nothing (a pointer).
type leaseOwner Lease

// RenewTTL: a watchdog lease is renewed to the Locker's lease; a fixed
// one, confirming a hand-over's grant window, to the rest of its TTL.
func (o *leaseOwner) RenewTTL() time.Duration {
	if !o.t.watchdog {
		return time.Until(o.cap)
	}
	return o.l.o.lease
}

func (o *leaseOwner) ExtendLease(ctx context.Context, ttl time.Duration) (bool, error) {
	ok, err := o.l.be.Extend(ctx, o.n, o.token, ttl)
	if err != nil && errors.Is(err, ErrClockStep) {
		return false, &keeper.StepError{Err: err}
	}
	return ok, err
}

func (o *leaseOwner) ValidUntil(sent time.Time, ttl time.Duration) time.Time {
	return o.l.be.ValidUntil(sent, ttl)
}

// Renewed reports the renewal and subscribes the control channel again if
// its listener broke while leases are held.
func (o *leaseOwner) Renewed(ok bool, err error) {
	o.l.tel.renewed(o.span, o.t.params, ok, err)
	o.l.watchControl()
}

func (o *leaseOwner) Lose(why keeper.Loss, lastErr error) { (*Lease)(o).lose(why, lastErr) }
