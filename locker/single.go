package locker

import (
	"context"
	"errors"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/internal/hub"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/scripts"
)

// single is the backend on one Redis deployment (a server, a Sentinel
// set-up or a Cluster behind its driver). A busy lock is waited for in a
// queue in Redis: release hands the lock straight to the queue's head and
// publishes the grant (see wait).
type single struct {
	*shared
	nd    *node
	multi oneNode // ObtainMany's one-script path (multi_fast.go)
}

func newSingle(sh *shared, nd *node) *single { return &single{shared: sh, nd: nd} }

func (b *single) obtain(ctx context.Context, key string, n names, token string, t terms) (held, error) {
	var w *hub.Waiter
	if t.wait > 0 {
		// Registered before the first try so that a hand-over published
		// right after it is not dropped.
		w = b.nd.hub.Register(token)
		defer b.nd.hub.Unregister(w)
	}
	sent := time.Now()
	r, err := b.acquire(ctx, n, t.ttl, t.wait, scripts.ModeAcquire, t.call)
	switch {
	case err == nil:
	case !errors.Is(err, ErrNotReplicated):
		b.abandon(n, token, err)
		return held{}, lockerr.ObtainFailed(ctx, err)
	case r.Status == scripts.StatusObtained:
		return b.unreplicated(n, token, err)
	}
	// (A busy reply's queue entry need not reach the replicas: it is not
	// ownership.)
	if r.Status == scripts.StatusObtained {
		if b.o.ackReplicas > 0 && !r.Fast {
			// Obtained by a path whose writes this call's WAIT may not
			// cover (see granted).
			return b.granted(ctx, n, token, r.Fence, sent, t)
		}
		return b.lease(ctx, n, token, r.Fence, sent, r.PTTL)
	}
	if t.wait <= 0 {
		return held{}, ErrNotObtained
	}
	return b.wait(ctx, n, token, t, w, sent, r)
}

// acquire runs acquire.lua for n's holder (n.tokenArg), with its call
// context in dc (nil: allocated). Under WithReplicaAck a first try
// (scripts.ModeAcquire) is acknowledged: a shortfall is an error matching
// ErrNotReplicated, returned with the reply.
func (b *single) acquire(ctx context.Context, n names, ttl, wait time.Duration, mode string, dc *callctx.Deadline) (scripts.Reply, error) {
	cctx := b.o.bounds().CallIn(ctx, dc)
	ack := mode == scripts.ModeAcquire && b.o.ackReplicas > 0
	if mode == scripts.ModeAcquire && n.firstArgs != nil {
		// The first try's arguments, made with the holder (names.firstArgs).
		v, err := b.eval(cctx, ack, n.sc.Acquire, n.keys, n.firstArgs...)
		return parseAcked(v, err, ttl)
	}
	// A re-check's wait is what is left of it, a new value each time: only
	// a first try's is worth keeping boxed.
	var waitArg any
	if mode == scripts.ModeAcquire {
		waitArg = b.msArg(wait)
	} else {
		waitArg = scripts.MS(wait)
	}
	var v any
	var err error
	switch {
	case n.limitArg != nil && n.labelArg != nil:
		v, err = b.eval(cctx, ack, n.sc.Acquire, n.keys, n.tokenArg, b.msArg(ttl), waitArg, mode, b.sidArg, b.windowArg, n.limitArg, n.labelArg)
	case n.limitArg != nil:
		v, err = b.eval(cctx, ack, n.sc.Acquire, n.keys, n.tokenArg, b.msArg(ttl), waitArg, mode, b.sidArg, b.windowArg, n.limitArg)
	case n.labelArg != nil:
		v, err = b.eval(cctx, ack, n.sc.Acquire, n.keys, n.tokenArg, b.msArg(ttl), waitArg, mode, b.sidArg, b.windowArg, n.labelArg)
	default:
		v, err = b.eval(cctx, ack, n.sc.Acquire, n.keys, n.tokenArg, b.msArg(ttl), waitArg, mode, b.sidArg, b.windowArg)
	}
	return parseAcked(v, err, ttl)
}

// eval runs s; with ack, acknowledged by WithReplicaAck's replicas: the
// driver WAITs on the script's connection, and a shortfall is an error
// matching ErrNotReplicated, returned with the script's reply.
func (b *single) eval(ctx context.Context, ack bool, s *driver.Script, keys driver.Keys, args ...any) (any, error) {
	if !ack {
		return b.nd.drv.Eval(ctx, s, keys, args...)
	}
	v, acked, err := b.nd.drv.(driver.Acker).EvalAck(ctx, b.o.ackReplicas, b.o.ackTimeout, s, keys, args...)
	if err != nil {
		return nil, err
	}
	if acked < b.o.ackReplicas {
		return v, &lockerr.NotReplicated{Acked: acked, Want: b.o.ackReplicas, Timeout: b.o.ackTimeout}
	}
	return v, nil
}

// parseAcked parses the reply of an acquire call that failed with err,
// or ran but was not acknowledged (err matches ErrNotReplicated: the
// reply and the error are returned).
func parseAcked(v any, err error, ttl time.Duration) (scripts.Reply, error) {
	if err != nil && (v == nil || !errors.Is(err, ErrNotReplicated)) {
		return scripts.Reply{}, err
	}
	r, perr := scripts.ParseReply(v, ttl)
	if perr != nil {
		return scripts.Reply{}, perr
	}
	return r, err
}

// unreplicated releases by token a lock obtained without the replicas'
// acknowledgement (WithReplicaAck) and returns err, which matches
// ErrNotReplicated and ErrUnavailable. The release is a cleanup on a
// fresh context: the lock must not stay held by a caller told it failed.
func (b *single) unreplicated(n names, token string, err error) (held, error) {
	_, _ = b.leave(context.Background(), n, token, scripts.ModeDrop)
	return held{}, err
}

// granted confirms, under WithReplicaAck, a grant that no acknowledged
// write of this caller covers yet — a hand-over by another holder's
// release, a re-check that found the lock already handed over, a retried
// call — with an acknowledged renewal (confirm): its write follows the
// grant's in the replication stream, so a replica that acknowledged it
// has the grant too. A grant that lapsed meanwhile fails with ErrLate.
func (b *single) granted(ctx context.Context, n names, token string, fence int64, at time.Time, t terms) (held, error) {
	h, ok, err := b.confirm(ctx, n, token, fence, at, t)
	switch {
	case errors.Is(err, ErrNotReplicated):
		return b.unreplicated(n, token, err)
	case err != nil:
		b.abandon(n, token, nil)
		return held{}, lockerr.ObtainFailed(ctx, err)
	case !ok:
		return held{}, lockerr.Late
	}
	return h, nil
}

// leave takes a waiter out of the queue; see leave.lua for mode. It runs on a
// fresh context: it is clean-up that must happen even when ctx ended.
func (b *single) leave(ctx context.Context, n names, token, mode string) (scripts.Reply, error) {
	cctx, cancel := b.o.bounds().Cleanup(ctx)
	defer cancel()
	v, err := b.nd.drv.Eval(cctx, n.sc.Leave, n.keys, token, mode, scripts.HandoffGrant, b.windowArg)
	if err != nil {
		return scripts.Reply{}, err
	}
	return scripts.ParseReply(v, 0)
}

// abandon cleans up after an acquire that failed with err and whose outcome
// is unknown (its reply was lost or its context ended mid-call): the script
// may have run, so the token may hold the lock or sit in the queue. Best
// effort, on a fresh context, and off the caller's path: the token is not
// used again, and a Redis that does not answer would otherwise hold the
// caller's refusal up for a second call timeout (the clean-up's own). A
// first call that never left this process (err matches ErrNotSent: no
// connection or call slot could be had) wrote nothing, and nothing is sent
// for it: a burst of failures must not turn into a burst of clean-up calls.
// A queued waiter's failed re-check passes err nil: its earlier call queued
// it, so it always cleans up.
func (b *single) abandon(n names, token string, err error) {
	if errors.Is(err, ErrNotSent) {
		return
	}
	go func() { _, _ = b.leave(context.Background(), n, token, scripts.ModeDrop) }()
	// The lost call may still be on its way on its dead connection and run
	// after this clean-up; a second one a call timeout later catches that.
	// Anything later still is bounded by the lease and the wait.
	time.AfterFunc(b.o.callTimeout, func() { _, _ = b.leave(context.Background(), n, token, scripts.ModeDrop) })
}

// lease turns a grant of pttl, asked for at sent, into a held lock, or —
// when that lease has ended already — releases it by token and reports
// ErrLate.
func (b *single) lease(ctx context.Context, n names, token string, fence int64, sent time.Time, pttl time.Duration) (held, error) {
	if time.Until(sent.Add(pttl)) > 0 {
		return held{fence: fence, at: sent, granted: pttl}, nil
	}
	_, _ = b.leave(ctx, n, token, scripts.ModeDrop)
	return held{}, lockerr.Late
}

func (b *single) reenter(ctx context.Context, n names, token string, ttl time.Duration) (int, bool, error) {
	r, err := b.acquire(ctx, n, ttl, 0, scripts.ModeReenter, nil)
	if err != nil {
		return 0, false, err
	}
	return int(r.Holds), r.Status == scripts.StatusReentered, nil
}

func (b *single) extend(ctx context.Context, n names, token string, ttl time.Duration) (bool, error) {
	cctx, cancel := b.o.bounds().Call(ctx)
	defer cancel()
	// Under WithReplicaAck a renewal is acknowledged: one the replicas
	// did not confirm fails like a call that did not answer (retried until
	// the lease's local deadline).
	v, err := b.eval(cctx, b.o.ackReplicas > 0, n.sc.Extend, n.keys.First(n.sc.ExtendKeys), token, scripts.MS(ttl))
	if err != nil {
		return false, lockerr.Unavailable(err)
	}
	x, _ := v.(int64)
	return x == 1, nil
}

func (b *single) release(ctx context.Context, n names, token string, _ time.Duration) error {
	var v any
	var err error
	if n.releaseArgs != nil {
		v, err = b.nd.drv.Eval(ctx, n.sc.Release, n.keys, n.releaseArgs...)
	} else {
		v, err = b.nd.drv.Eval(ctx, n.sc.Release, n.keys, n.tokenArg, scripts.HandoffGrant, b.windowArg)
	}
	if err != nil {
		return lockerr.Unavailable(err)
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
			b.nd.hub.HandOver(token, hub.Grant{Fence: fence, Server: server, PTTL: time.Duration(pttl) * time.Millisecond})
		}
	}
	return nil
}

func (b *single) keep(ctx context.Context, n names, token string, _, d time.Duration) error {
	v, err := b.nd.drv.Eval(ctx, n.sc.Keep, n.keys, n.tokenArg, scripts.MS(d))
	if err != nil {
		return lockerr.Unavailable(err)
	}
	if x, _ := v.(int64); x < 0 {
		return ErrNotHeld
	}
	return nil
}

func (b *single) pttl(ctx context.Context, n names, token string) (time.Duration, error) {
	cctx, cancel := b.o.bounds().Call(ctx)
	defer cancel()
	v, err := b.nd.drv.Eval(cctx, n.sc.PTTL, n.keys.First(n.sc.ExtendKeys), token)
	if err != nil {
		return 0, lockerr.Unavailable(err)
	}
	if x, _ := v.(int64); x >= 0 {
		return time.Duration(x) * time.Millisecond, nil
	}
	return 0, ErrNotHeld
}

// validUntil: one node's lease ends when Redis says; no drift allowance.
func (b *single) validUntil(sent time.Time, ttl time.Duration) time.Time { return sent.Add(ttl) }

func (b *single) records() (*node, error) { return b.nd, nil }

func (b *single) semaphores() error { return nil }

func (b *single) ping(ctx context.Context) error {
	cctx, cancel := b.o.bounds().Call(ctx)
	defer cancel()
	return nodeFailed(b.nd.ping(cctx))
}

func (b *single) close() error { return b.nd.close() }
