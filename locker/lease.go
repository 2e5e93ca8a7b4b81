package locker

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Lease is a held lock. Its Context is cancelled with cause ErrLockLost when
// the lock is lost (renewal refused or impossible, or a fixed TTL ran out),
// and with cause ErrNotHeld after the last Release. Release every Lease,
// also on error paths (defer it): a watchdog lease is renewed until then.
//
// A Lease is safe for concurrent use.
type Lease struct {
	l      *Locker
	key    string
	n      names
	token  string // owner token, shared by all holds of one root
	fence  int64
	holds  int
	root   *Lease // the outermost lease of this hold chain; itself for a root
	parent *Lease // the next lease up the context chain (any key, any Locker)
	ctx    context.Context

	released bool // guarded by root.mu

	// Only used on a root.
	mu       sync.Mutex
	cancel   context.CancelCauseFunc
	t        terms
	live     int       // holds of this chain not yet released
	done     bool      // lost or fully released
	deadline time.Time // local, conservative end of the lease
	cap      time.Time // a fixed lease's end (TTL after it was granted)
	expiry   *time.Timer
	renewal  *time.Timer
	span     trace.Span // locktag.hold
	since    time.Time  // obtained
}

type ctxKey struct{}

// FromContext returns the innermost lease carried by ctx, or nil.
func FromContext(ctx context.Context) *Lease {
	le, _ := ctx.Value(ctxKey{}).(*Lease)
	return le
}

// heldIn returns the live root lease of l for key carried by ctx, or nil.
func heldIn(ctx context.Context, l *Locker, key string) *Lease {
	for le := FromContext(ctx); le != nil; le = le.parent {
		if le.l == l && le.key == key {
			root := le.root
			root.mu.Lock()
			done := root.done
			root.mu.Unlock()
			if !done {
				return root
			}
		}
	}
	return nil
}

// newLease builds a root lease for a grant of granted made at at (or
// asked for at at). A grant shorter than the terms — a hand-over's grant
// window — is confirmed by the lease's first renewal, at a third of it,
// which extends it to the terms; a holder done before then never pays for
// it.
func (l *Locker) newLease(ctx context.Context, key string, n names, token string, fence int64, t terms, at time.Time, granted time.Duration) *Lease {
	until := l.validUntil(at, granted)
	le := &Lease{l: l, key: key, n: n, token: token, fence: fence, holds: 1, t: t, live: 1, deadline: until}
	if !t.watchdog {
		le.cap = at.Add(t.ttl)
	}
	le.root = le
	le.parent = FromContext(ctx)
	le.since = time.Now()
	hctx, span := l.tel.startHold(ctx, key, t.params, fence)
	le.span = span
	cctx, cancel := context.WithCancelCause(hctx)
	le.cancel = cancel
	le.ctx = context.WithValue(cctx, ctxKey{}, le)
	le.mu.Lock()
	le.expiry = time.AfterFunc(time.Until(until), le.expired)
	switch {
	case granted < t.ttl:
		le.renewal = time.AfterFunc(granted/3, le.renew)
	case t.watchdog:
		le.renewal = time.AfterFunc(l.o.renewEvery, le.renew)
	}
	le.mu.Unlock()
	return le
}

// reenter adds a hold to root for a nested Obtain with ctx.
func (l *Locker) reenter(ctx context.Context, root *Lease, p Params) (*Lease, error) {
	ttl := p.TTL
	if ttl <= 0 {
		ttl = root.t.ttl
	}
	var r reply
	var err error
	if l.redlock() {
		r, err = l.reenterQuorum(ctx, root, ttl)
	} else {
		r, err = l.acquire(ctx, root.n, root.token, ttl, 0, modeReenter)
	}
	if err != nil {
		return nil, obtainFailed(ctx, err)
	}
	if r.status != statusReentered {
		// The outer hold is gone: it was lost.
		return nil, errors.Join(ErrNotObtained, ErrLockLost)
	}
	le := &Lease{l: l, key: root.key, n: root.n, token: root.token, fence: root.fence, holds: int(r.holds), root: root, parent: FromContext(ctx)}
	le.ctx = context.WithValue(ctx, ctxKey{}, le)
	root.mu.Lock()
	root.live++
	root.mu.Unlock()
	return le, nil
}

// Key is the lock's name as passed to Obtain ("" for a nil Lease).
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
func (le *Lease) Context() context.Context { return le.ctx }

// Lost reports whether the lock was lost before it was released.
func (le *Lease) Lost() bool {
	return errors.Is(context.Cause(le.root.ctx), ErrLockLost)
}

// TTL returns the remaining lease in Redis, or ErrNotHeld.
func (le *Lease) TTL(ctx context.Context) (time.Duration, error) {
	if le.l.redlock() {
		return le.l.pttlQuorum(ctx, le)
	}
	cctx, cancel := le.l.callCtx(ctx)
	defer cancel()
	v, err := le.l.drv.Eval(cctx, scriptPTTL, le.n.keys[:1], le.token)
	if err != nil {
		return 0, unavailable(err)
	}
	if n, _ := v.(int64); n >= 0 {
		return time.Duration(n) * time.Millisecond, nil
	}
	return 0, ErrNotHeld
}

// Extend resets the lease in Redis to ttl from now and moves the local
// deadline with it. A watchdog lease keeps being renewed afterwards.
func (le *Lease) Extend(ctx context.Context, ttl time.Duration) error {
	root := le.root
	sent := time.Now()
	ok, err := root.extend(ctx, ttl)
	if err != nil {
		return err
	}
	if !ok {
		root.lose()
		return ErrNotHeld
	}
	root.mu.Lock()
	defer root.mu.Unlock()
	if root.done {
		return ErrNotHeld
	}
	root.t.ttl = ttl
	if !root.t.watchdog {
		root.cap = sent.Add(ttl)
	}
	root.setDeadlineLocked(root.l.validUntil(sent, ttl))
	return nil
}

func (root *Lease) extend(ctx context.Context, ttl time.Duration) (bool, error) {
	if root.l.redlock() {
		return root.l.extendQuorum(ctx, root, ttl)
	}
	cctx, cancel := root.l.callCtx(ctx)
	defer cancel()
	v, err := root.l.drv.Eval(cctx, scriptExtend, root.n.keys[:1], root.token, ms(ttl))
	if err != nil {
		return false, unavailable(err)
	}
	n, _ := v.(int64)
	return n == 1, nil
}

// Release drops this hold; the lock is freed (and handed to the next waiter)
// when the last hold is released. Release ignores ctx's cancellation, so a
// cancelled request still releases its lock, and is bounded by the call
// timeout. It returns ErrNotHeld, touching nothing, when the lock is no
// longer held by this lease (lost, expired, or released before).
func (le *Lease) Release(ctx context.Context) error {
	span := le.l.tel.startRelease(ctx)
	err := le.release(ctx)
	le.l.tel.endRelease(span, le, err)
	return err
}

func (le *Lease) release(ctx context.Context) error {
	root := le.root
	root.mu.Lock()
	if le.released {
		root.mu.Unlock()
		return ErrNotHeld
	}
	le.released = true
	root.live--
	last := root.live == 0
	if last {
		root.stopLocked()
	}
	root.mu.Unlock()

	cctx, cancel := context.WithTimeout(withPriority(context.WithoutCancel(ctx)), le.l.o.callTimeout)
	defer cancel()
	if le.l.redlock() {
		err := le.l.releaseQuorum(cctx, le, root.t.ttl)
		if last {
			root.finish(ErrNotHeld)
		}
		return err
	}
	v, err := le.l.drv.Eval(cctx, scriptRelease, le.n.keys, le.token, le.n.channel, handoffGrant, le.l.windowArg)
	if last {
		root.finish(ErrNotHeld)
	}
	if err != nil {
		return unavailable(err)
	}
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return ErrNotHeld
		}
	case []any:
		// Handed to a waiter: wake it here if it is ours.
		if len(x) == 5 {
			token, _ := x[1].(string)
			fence, _ := x[2].(int64)
			server, _ := x[3].(int64)
			pttl, _ := x[4].(int64)
			le.l.hub.handOver(token, grant{fence: fence, server: server, pttl: time.Duration(pttl) * time.Millisecond})
		}
	}
	return nil
}

// stopLocked stops the root's timers; root.mu is held.
func (root *Lease) stopLocked() {
	if root.expiry != nil {
		root.expiry.Stop()
	}
	if root.renewal != nil {
		root.renewal.Stop()
	}
}

// finish ends the root: timers stopped, context cancelled with cause.
func (root *Lease) finish(cause error) {
	root.mu.Lock()
	if root.done {
		root.mu.Unlock()
		return
	}
	root.done = true
	root.stopLocked()
	root.mu.Unlock()
	root.cancel(cause)
	root.l.tel.endHold(root.span, root.since, root.t.params, cause)
}

// lose marks the lock lost.
func (root *Lease) lose() { root.finish(ErrLockLost) }

// expired runs when the local deadline passes without a confirmed renewal.
func (root *Lease) expired() { root.lose() }

func (root *Lease) setDeadlineLocked(until time.Time) {
	root.deadline = until
	root.expiry.Reset(time.Until(until))
}

// renew runs on the renewal timer: the watchdog's, or the confirmation of a
// lease granted for a grant window, which extends a fixed lease to the rest
// of its TTL. A refusal (the key is gone or owned by another) loses the lock
// at once; a failed call is retried until the local deadline, whose timer
// then loses it. It never re-acquires.
func (root *Lease) renew() {
	root.mu.Lock()
	if root.done {
		root.mu.Unlock()
		return
	}
	deadline, ttl := root.deadline, root.l.o.lease
	if !root.t.watchdog {
		ttl = time.Until(root.cap)
	}
	root.mu.Unlock()
	if ttl <= 0 {
		return // the expiry timer ends it
	}

	ctx, cancel := context.WithDeadline(withPriority(context.Background()), deadline)
	sent := time.Now()
	ok, err := root.extend(ctx, ttl)
	cancel()
	root.l.tel.renewed(root.span, root.t.params, ok, err)

	root.mu.Lock()
	if root.done {
		root.mu.Unlock()
		return
	}
	if err == nil && !ok {
		root.mu.Unlock()
		root.lose()
		return
	}
	if err != nil {
		retry := min(root.l.o.renewEvery/4, time.Second)
		root.renewal.Reset(max(retry, 10*time.Millisecond))
	} else {
		root.setDeadlineLocked(root.l.validUntil(sent, ttl))
		if root.t.watchdog {
			root.renewal.Reset(root.l.o.renewEvery)
		}
	}
	root.mu.Unlock()
}
