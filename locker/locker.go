package locker

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Locker obtains locks on one Redis deployment, or on N independent
// masters with the Redlock algorithm (NewRedlock). It is safe for concurrent
// use; create one per process and share it. Close it at shutdown.
type Locker struct {
	o      options
	nodes  []*node // one, or Redlock's N masters
	quorum int     // len(nodes)/2 + 1
	sid    string  // names this Locker's waiters in queue entries (see hub)
	// Script arguments made once: boxing them per call would allocate.
	sidArg, windowArg any

	// The single node's driver and hub (nodes[0]), for the one-node paths.
	drv Driver
	hub *hub
	tel *telemetry
}

// node is one Redis master with its shared subscriber connection.
type node struct {
	drv Driver
	hub *hub
}

// New returns a Locker on a redigo pool. The pool's Dial (or DialContext) is
// also used to open the one subscriber connection that all waiters share.
func New(pool *redis.Pool, opts ...Option) *Locker {
	return NewWithDriver(poolDriver(pool, opts), opts...)
}

// poolDriver is the Driver New and NewRedlock use for pool: pipelined when
// opts ask for it.
func poolDriver(pool *redis.Pool, opts []Option) Driver {
	if o := evaluateOptions(opts); o.pipeline > 0 {
		return pipelinedDriver(pool, o.pipeline, o.callTimeout)
	}
	return RedigoDriver(pool)
}

// NewWithDriver returns a Locker on any Driver.
func NewWithDriver(d Driver, opts ...Option) *Locker {
	return newLocker([]Driver{d}, opts)
}

func newLocker(ds []Driver, opts []Option) *Locker {
	if len(ds) == 0 {
		panic("locker: no Redis nodes")
	}
	l := &Locker{o: evaluateOptions(opts), quorum: len(ds)/2 + 1}
	l.sid = newToken()[:11] // 66 random bits: a subscriber id per Locker
	l.sidArg, l.windowArg = l.sid, ms(l.o.grantWindow)
	for _, d := range ds {
		d = bound(d, l.o.maxCalls)
		l.nodes = append(l.nodes, &node{drv: d, hub: newHub(d, &l.o, l.sid)})
	}
	l.drv, l.hub = l.nodes[0].drv, l.nodes[0].hub
	l.tel = newTelemetry(&l.o)
	return l
}

// redlock reports whether l spans several masters.
func (l *Locker) redlock() bool { return len(l.nodes) > 1 }

// Close closes the shared subscriber connections. Leases already obtained
// keep working until released; waiting Obtain calls fall back to re-checking
// at the holder's remaining lease.
func (l *Locker) Close() error {
	var errs []error
	for _, nd := range l.nodes {
		errs = append(errs, nd.hub.close())
		if r, ok := nd.drv.(interface{ closeReserved() }); ok {
			r.closeReserved()
		}
	}
	return errors.Join(errs...)
}

// Params are the terms of one Obtain call. The zero value asks for a
// watchdog lease and does not wait.
type Params struct {
	// TTL is a fixed lease: the lock expires TTL after it was obtained unless
	// extended, and the lease's context is cancelled with ErrLockLost then.
	// Zero selects watchdog mode: a lease (default 30s) renewed in the
	// background (default every 10s) until Release.
	TTL time.Duration
	// Wait is how long to wait for a busy lock. Zero fails at once with
	// ErrNotObtained. The wait never outlasts ctx.
	Wait time.Duration
	// Name is the low-cardinality name spans and metrics carry (attribute
	// locktag.lock.name): the route or full method for the adapters. It
	// defaults to Template, or "locker".
	Name string
	// Template is the key template the name was made from, for spans
	// (attribute locktag.key.template). Optional.
	Template string
}

// Obtain takes the lock named key. It returns a Lease, or an error matching
// ErrNotObtained (busy; joined with ctx.Err() when ctx ended), ErrUnavailable
// (Redis failed; the lock is not held) or ErrEmptyKey.
//
// If ctx carries a lease of this Locker for the same key (ctx is, or derives
// from, that lease's Context), Obtain re-enters it: the hold count goes up,
// no wait happens, and the lock is freed only when every hold is released.
//
// A waiting Obtain joins a first-come-first-served queue in Redis; Release
// hands the lock straight to the head of the queue and notifies it through
// the Locker's one shared subscriber connection. There is no polling: a
// waiter also re-checks when the holder's lease would run out, so a lost
// notification costs at most one lease.
func (l *Locker) Obtain(ctx context.Context, key string, p Params) (*Lease, error) {
	start := time.Now()
	span := l.tel.startObtain(ctx, key, p)
	le, err := l.obtain(ctx, key, p)
	l.tel.endObtain(span, start, p, le, err)
	return le, err
}

func (l *Locker) obtain(ctx context.Context, key string, p Params) (*Lease, error) {
	if key == "" {
		return nil, ErrEmptyKey
	}
	if err := ctx.Err(); err != nil {
		return nil, errors.Join(ErrNotObtained, err)
	}
	if held := heldIn(ctx, l, key); held != nil {
		return l.reenter(ctx, held, p)
	}
	t := terms{ttl: p.TTL, wait: p.Wait, params: p}
	if t.ttl <= 0 {
		t.ttl, t.watchdog = l.o.lease, true
	}
	if l.redlock() {
		return l.obtainQuorum(ctx, key, t)
	}
	n := l.names(key)
	token := newToken()
	var w *waiter
	if t.wait > 0 {
		// Registered before the first try so that a hand-over published
		// right after it is not dropped.
		w = l.hub.register(token)
		defer l.hub.unregister(w)
	}
	sent := time.Now()
	r, err := l.acquire(ctx, n, token, t.ttl, t.wait, modeAcquire)
	if err != nil {
		l.abandon(n, token, err)
		return nil, obtainFailed(ctx, err)
	}
	if r.status == statusObtained {
		return l.lease(ctx, key, n, token, r.fence, t, sent, r.pttl)
	}
	if t.wait <= 0 {
		return nil, ErrNotObtained
	}
	return l.wait(ctx, key, n, token, t, w, sent, r)
}

// terms are an Obtain call's Params after defaults.
type terms struct {
	ttl      time.Duration
	wait     time.Duration
	watchdog bool
	params   Params // as given, for telemetry
}

func (l *Locker) acquire(ctx context.Context, n names, token string, ttl, wait time.Duration, mode string) (reply, error) {
	cctx, cancel := l.callCtx(ctx)
	defer cancel()
	v, err := l.drv.Eval(cctx, scriptAcquire, n.keys, token, ms(ttl), ms(wait), mode, n.channel, l.sidArg, l.windowArg)
	if err != nil {
		return reply{}, err
	}
	return parseReply(v)
}

// leave takes a waiter out of the queue; see leave.lua for mode. It runs on a
// fresh context: it is clean-up that must happen even when ctx ended.
func (l *Locker) leave(ctx context.Context, n names, token, mode string) (reply, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.o.callTimeout)
	defer cancel()
	v, err := l.drv.Eval(cctx, scriptLeave, n.keys, token, mode, n.channel, handoffGrant, l.windowArg)
	if err != nil {
		return reply{}, err
	}
	return parseReply(v)
}

// abandon cleans up after an acquire that failed with err and whose outcome
// is unknown (its reply was lost or its context ended mid-call): the script
// may have run, so the token may hold the lock or sit in the queue. Best
// effort, on a fresh context, so that nothing is left behind when Obtain
// returns. A first call that never left this process (err matches
// ErrNotSent: no connection or call slot could be had) wrote nothing, and
// nothing is sent for it: a burst of failures must not turn into a burst of
// clean-up calls. A queued waiter's failed re-check passes err nil: its
// earlier call queued it, so it always cleans up.
func (l *Locker) abandon(n names, token string, err error) {
	if errors.Is(err, ErrNotSent) {
		return
	}
	_, _ = l.leave(context.Background(), n, token, modeDrop)
	// The lost call may still be on its way on its dead connection and run
	// after this clean-up; a second one a call timeout later catches that.
	// Anything later still is bounded by the lease and the wait.
	time.AfterFunc(l.o.callTimeout, func() { _, _ = l.leave(context.Background(), n, token, modeDrop) })
}

// callCtx bounds one Redis call by the call timeout. The drivers turn a
// context's deadline into socket timeouts, so a deadline is all a call needs:
// callCtx adds one without the timer (and allocations) of
// context.WithTimeout.
func (l *Locker) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	dl := time.Now().Add(l.o.callTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		return ctx, func() {}
	}
	return &deadlineCtx{Context: ctx, dl: dl}, func() {}
}

// deadlineCtx is its parent with an earlier deadline but no timer of its
// own: Done is the parent's, and Err reports the deadline once it passed.
type deadlineCtx struct {
	context.Context
	dl time.Time
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.dl, true }

func (c *deadlineCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// wait waits for a hand-over after a busy first try (r, sent when sent).
//
// The waiter sits in the key's queue in Redis; a release hands the lock
// straight to the queue's head and publishes the grant. This process's
// waiters on the key share one safety re-check at the end of the current
// holder's lease (see hub), so a lost notice, a holder that crashed or a
// grant that lapsed costs at most that lease, and only one call per process.
func (l *Locker) wait(ctx context.Context, key string, n names, token string, t terms, w *waiter, sent time.Time, r reply) (*Lease, error) {
	waitUntil := sent.Add(t.wait)
	defer l.tel.waiting(t.params)()
	wt := l.hub.watch(n.channel, w)
	defer wt.close()
	deadline := time.NewTimer(time.Until(waitUntil))
	defer deadline.Stop()
	recheck := false
	observed := false
	for {
		missed, err := wt.ensure(ctx, sent)
		if err != nil {
			_, _ = l.leave(ctx, n, token, modeDrop)
			return nil, errors.Join(ErrNotObtained, err)
		}
		recheck = recheck || missed
		if recheck {
			recheck = false
			sent = time.Now()
			r, err = l.acquire(ctx, n, token, t.ttl, time.Until(waitUntil), modeRecheck)
			if err != nil {
				// Queued before, so there is something to clean up even
				// when this call was never sent.
				l.abandon(n, token, nil)
				return nil, obtainFailed(ctx, err)
			}
			if r.status == statusObtained {
				return l.lease(ctx, key, n, token, r.fence, t, sent, r.pttl)
			}
			observed = false
		}
		if !observed {
			observed = true
			wt.observe(r.pttl, r.server)
		}
		select {
		case g := <-w.grant:
			// The grant happened g.server-r.server ms after the server
			// answered r, and r was answered after sent: a conservative
			// local time of the grant.
			at := sent.Add(time.Duration(g.server-r.server-1) * time.Millisecond)
			if time.Until(at.Add(g.pttl)) > 0 {
				return l.newLease(ctx, key, n, token, g.fence, t, at, g.pttl), nil
			}
			// Handed over while this process could not run (paused or
			// starved), the grant may have lapsed: Redis knows.
			recheck = true
		case <-w.kick:
			// The subscriber connection broke: notifications may be lost.
			wt.broken()
			recheck = true
		case <-w.check:
			recheck = true
		case <-wt.polled():
			recheck = true
		case <-deadline.C:
			sent = time.Now()
			r, err := l.leave(ctx, n, token, modeKeep)
			if err != nil {
				return nil, obtainFailed(ctx, err)
			}
			if r.status == statusObtained {
				return l.lease(ctx, key, n, token, r.fence, t, sent, r.pttl)
			}
			return nil, ErrNotObtained
		case <-ctx.Done():
			_, _ = l.leave(ctx, n, token, modeDrop)
			return nil, errors.Join(ErrNotObtained, ctx.Err())
		}
	}
}

// ErrLate is wrapped by the error of an Obtain whose lock was granted but
// whose lease had ended by the time the grant's reply reached this process
// (a reply slower than the lease, a paused process). Redis was healthy and
// the lock was simply not usable any more, so the error also matches
// ErrNotObtained (busy: try again), not ErrUnavailable. The grant is
// released by token.
var ErrLate = errors.New("locker: lease ended before the reply arrived")

// errLate is the error of a late grant.
var errLate error = &multiError{msg: ErrLate.Error(), errs: []error{ErrLate, ErrNotObtained}}

// lease turns a grant of pttl, asked for at sent, into a Lease, or — when
// that lease has ended already — releases it by token and reports ErrLate.
func (l *Locker) lease(ctx context.Context, key string, n names, token string, fence int64, t terms, sent time.Time, pttl time.Duration) (*Lease, error) {
	if time.Until(sent.Add(pttl)) > 0 {
		return l.newLease(ctx, key, n, token, fence, t, sent, pttl), nil
	}
	_, _ = l.leave(ctx, n, token, modeDrop)
	return nil, errLate
}

// newToken returns 128 random bits, base64url-encoded.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand documents it)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

var scriptPing = newScript("return 1")

// Ping checks that every Redis node answers (credentials, TLS, network) by
// running a trivial script, and returns an error matching ErrUnavailable
// when one does not. New does not connect; call Ping at start-up to fail
// there rather than on the first request.
func (l *Locker) Ping(ctx context.Context) error {
	cctx, cancel := l.callCtx(ctx)
	defer cancel()
	var errs []error
	for i, nd := range l.nodes {
		if _, err := nd.drv.Eval(cctx, scriptPing, nil); err != nil {
			if l.redlock() {
				err = fmt.Errorf("master %d: %w", i, err)
			}
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return unavailable(errors.Join(errs...))
	}
	return nil
}
