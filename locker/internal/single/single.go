// Package single is the backend on one Redis deployment (a server, a
// Sentinel set-up or a Cluster behind its driver): a busy lock is waited
// for in a first-come-first-served queue in Redis, and a release hands
// the lock straight to the queue's head. It implements backend.Backend,
// backend.Admin and backend.MultiFast.
package single

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/internal/hub"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/preflight"
	"github.com/locktag/locktag/locker/internal/protocol"
)

// Backend is the backend on one Redis deployment (a server, a Sentinel
// set-up or a Cluster behind its driver). A busy lock is waited for in a
// queue in Redis: release hands the lock straight to the queue's head and
// publishes the grant (see wait).
type Backend struct {
	*backend.Shared
	nd    *backend.Node
	multi atomic.Bool // ObtainMany's one-script path is on (see multi.go)
}

// New returns the backend on nd. multi turns ObtainMany's one-script path
// on: for a driver that does not spread keys over masters (no
// driver.Masters) and no WithReplicaAck, where each key's acquisition is
// acknowledged on its own.
func New(sh *backend.Shared, nd *backend.Node, multi bool) *Backend {
	b := &Backend{Shared: sh, nd: nd}
	b.multi.Store(multi)
	return b
}

// Obtain takes the lock, or queues in Redis and waits for the hand-over
// (see wait.go).
func (b *Backend) Obtain(ctx context.Context, key string, n protocol.Names, token string, t backend.Terms) (backend.Held, error) {
	var w *hub.Waiter
	if t.Wait > 0 {
		// Registered before the first try so that a hand-over published
		// right after it is not dropped.
		w = b.nd.Hub.RegisterAt(token, n.Channel)
		defer b.nd.Hub.Unregister(w)
	}
	sent := time.Now()
	r, err := b.acquire(ctx, n, t.TTL, t.Wait, protocol.AcquireNew, t.Call)
	switch {
	case err == nil:
	case !errors.Is(err, lockerr.ErrNotReplicated):
		b.abandon(n, token, err)
		return backend.Held{}, lockerr.ObtainFailed(ctx, err)
	case r.Status == protocol.StatusObtained:
		return b.unreplicated(n, token, err)
	}
	// (A busy reply's queue entry need not reach the replicas: it is not
	// ownership.)
	if r.Status == protocol.StatusObtained {
		if b.Cfg.AckReplicas > 0 && !r.Fast {
			// Obtained by a path whose writes this call's WAIT may not
			// cover (see granted).
			return b.granted(ctx, n, token, r.Fence, sent, t)
		}
		if r.Fast && n.Scripts == protocol.Mutex {
			// A free mutex's token is the server's clock.
			if err := b.clockRead(r.Fence, sent); err != nil {
				_ = b.Release(context.WithoutCancel(ctx), n, token, t.TTL)
				return backend.Held{}, lockerr.Unavailable(err)
			}
		}
		return b.lease(ctx, n, token, r.Fence, sent, r.PTTL)
	}
	if t.Wait <= 0 {
		return backend.Held{}, lockerr.ErrNotObtained
	}
	return b.wait(ctx, n, token, t, w, sent, r)
}

// acquire runs acquire.lua for n's holder (n.TokenArg), with its call
// context in dc (nil: allocated). Under WithReplicaAck a first try
// (protocol.AcquireNew) is acknowledged: a shortfall is an error matching
// lockerr.ErrNotReplicated, returned with the reply.
func (b *Backend) acquire(ctx context.Context, n protocol.Names, ttl, wait time.Duration, mode protocol.AcquireMode, dc *callctx.Deadline) (protocol.Reply, error) {
	cctx := b.Cfg.Bounds.CallIn(ctx, dc)
	ack := mode == protocol.AcquireNew && b.Cfg.AckReplicas > 0
	if mode == protocol.AcquireNew && n.FirstArgs != nil {
		// The first try's arguments, made with the holder (Names.FirstArgs).
		v, err := b.eval(cctx, ack, n.Scripts.Acquire.Script, n.Keys, n.FirstArgs)
		return parseAcked(v, err, ttl)
	}
	// A re-check passes the first try's wait (its queue entry names it: see
	// entry in common.lua), the first try's argument where there is one.
	waitArg := n.WaitArg
	if mode != protocol.AcquireRecheck || waitArg == nil {
		waitArg = b.MSArg(wait)
	}
	var a protocol.Args
	n.AcquireArgs(&a, b.MSArg(ttl), waitArg, mode.Arg(), b.SIDArg, b.WindowArg)
	var buf [8]any
	v, err := b.eval(cctx, ack, n.Scripts.Acquire.Script, n.Keys, n.Scripts.Acquire.Append(buf[:0], &a))
	return parseAcked(v, err, ttl)
}

// eval runs s with args; with ack, acknowledged by WithReplicaAck's
// replicas: the driver WAITs on the script's connection, and a shortfall
// is an error matching lockerr.ErrNotReplicated, returned with the
// script's reply.
func (b *Backend) eval(ctx context.Context, ack bool, s *driver.Script, keys driver.Keys, args []any) (any, error) {
	if !ack {
		return b.nd.Drv.Eval(ctx, s, keys, args...)
	}
	v, acked, err := b.nd.Drv.(driver.Acker).EvalAck(ctx, b.Cfg.AckReplicas, b.Cfg.AckTimeout, s, keys, args...)
	if err != nil {
		return nil, err
	}
	if acked < b.Cfg.AckReplicas {
		return v, &lockerr.NotReplicated{Acked: acked, Want: b.Cfg.AckReplicas, Timeout: b.Cfg.AckTimeout}
	}
	return v, nil
}

// parseAcked parses the reply of an acquire call that failed with err,
// or ran but was not acknowledged (err matches lockerr.ErrNotReplicated: the
// reply and the error are returned).
func parseAcked(v any, err error, ttl time.Duration) (protocol.Reply, error) {
	if err != nil && (v == nil || !errors.Is(err, lockerr.ErrNotReplicated)) {
		return protocol.Reply{}, err
	}
	r, perr := protocol.ParseReply(v, ttl)
	if perr != nil {
		return protocol.Reply{}, perr
	}
	return r, err
}

// unreplicated releases by token a lock obtained without the replicas'
// acknowledgement (WithReplicaAck) and returns err, which matches
// lockerr.ErrNotReplicated and lockerr.ErrUnavailable. The release is a cleanup on a
// fresh context: the lock must not stay held by a caller told it failed.
func (b *Backend) unreplicated(n protocol.Names, token string, err error) (backend.Held, error) {
	_, _ = b.leave(context.Background(), n, token, protocol.LeaveReleaseGrant)
	return backend.Held{}, err
}

// granted confirms, under WithReplicaAck, a grant that no acknowledged
// write of this caller covers yet — a hand-over by another holder's
// release, a re-check that found the lock already handed over, a retried
// call — with an acknowledged renewal (confirm): its write follows the
// grant's in the replication stream, so a replica that acknowledged it
// has the grant too. A grant that lapsed meanwhile fails with lockerr.ErrGrantExpired.
func (b *Backend) granted(ctx context.Context, n protocol.Names, token string, fence int64, at time.Time, t backend.Terms) (backend.Held, error) {
	h, ok, err := b.confirm(ctx, n, token, fence, at, t)
	switch {
	case errors.Is(err, lockerr.ErrNotReplicated):
		return b.unreplicated(n, token, err)
	case err != nil:
		b.abandon(n, token, nil)
		return backend.Held{}, lockerr.ObtainFailed(ctx, err)
	case !ok:
		return backend.Held{}, lockerr.GrantExpired
	}
	return h, nil
}

// leave takes a waiter out of the queue; see leave.lua for mode. It runs on a
// fresh context: it is clean-up that must happen even when ctx ended.
func (b *Backend) leave(ctx context.Context, n protocol.Names, token string, mode protocol.LeaveMode) (protocol.Reply, error) {
	cctx, cancel := b.Cfg.Bounds.Cleanup(ctx)
	defer cancel()
	var a protocol.Args
	a[protocol.ArgToken] = token
	a[protocol.ArgMode] = mode.Arg()
	a[protocol.ArgHandoff] = protocol.HandoffGrant
	a[protocol.ArgWindowMS] = b.WindowArg
	n.EntryArgs(&a)
	v, err := n.Scripts.Leave.Eval(cctx, b.nd.Drv, n.Keys, &a)
	if err != nil {
		return protocol.Reply{}, err
	}
	return protocol.ParseReply(v, 0)
}

// abandon cleans up after an acquire that failed with err and whose outcome
// is unknown (its reply was lost or its context ended mid-call): the script
// may have run, so the token may hold the lock or sit in the queue. Best
// effort, on a fresh context, and off the caller's path: the token is not
// used again, and a Redis that does not answer would otherwise hold the
// caller's refusal up for a second call timeout (the clean-up's own). A
// first call that never left this process (err matches lockerr.ErrNotSent: no
// connection or call slot could be had) wrote nothing, and nothing is sent
// for it: a burst of failures must not turn into a burst of clean-up calls.
// A queued waiter's failed re-check passes err nil: its earlier call queued
// it, so it always cleans up.
func (b *Backend) abandon(n protocol.Names, token string, err error) {
	if errors.Is(err, lockerr.ErrNotSent) {
		return
	}
	go func() { _, _ = b.leave(context.Background(), n, token, protocol.LeaveReleaseGrant) }()
	// The lost call may still be on its way on its dead connection and run
	// after this clean-up; a second one a call timeout later catches that.
	// Anything later still is bounded by the lease and the wait.
	time.AfterFunc(b.Cfg.Bounds.Timeout, func() { _, _ = b.leave(context.Background(), n, token, protocol.LeaveReleaseGrant) })
}

// lease turns a grant of pttl, asked for at sent, into a held lock, or —
// when that lease has ended already — releases it by token and reports
// lockerr.ErrGrantExpired.
func (b *Backend) lease(ctx context.Context, n protocol.Names, token string, fence int64, sent time.Time, pttl time.Duration) (backend.Held, error) {
	if time.Until(sent.Add(pttl)) > 0 {
		return backend.Held{Fence: fence, At: sent, Granted: pttl}, nil
	}
	_, _ = b.leave(ctx, n, token, protocol.LeaveReleaseGrant)
	return backend.Held{}, lockerr.GrantExpired
}

// Reenter adds a hold to the lock token holds (acquire.lua, mode 'e').
func (b *Backend) Reenter(ctx context.Context, n protocol.Names, token string, ttl time.Duration) (int, bool, error) {
	r, err := b.acquire(ctx, n, ttl, 0, protocol.AcquireReenter, nil)
	if err != nil {
		return 0, false, err
	}
	return int(r.Holds), r.Status == protocol.StatusReentered, nil
}

// Extend resets token's lease; under WithReplicaAck, acknowledged.
func (b *Backend) Extend(ctx context.Context, n protocol.Names, token string, ttl time.Duration) (bool, error) {
	cctx, cancel := b.Cfg.Bounds.Call(ctx)
	defer cancel()
	// Under WithReplicaAck a renewal is acknowledged: one the replicas
	// did not confirm fails like a call that did not answer (retried until
	// the lease's local deadline).
	sent := time.Now()
	var a protocol.Args
	a[protocol.ArgToken] = token
	a[protocol.ArgTTLMS] = protocol.MS(ttl)
	var buf [2]any
	v, err := b.eval(cctx, b.Cfg.AckReplicas > 0, n.Scripts.Extend.Script, n.Keys.First(n.Scripts.ExtendKeys), n.Scripts.Extend.Append(buf[:0], &a))
	if err != nil {
		return false, lockerr.Unavailable(err)
	}
	// 0: not held; else the server's clock in ms (a bridged lock's tokens
	// are not the clock's: its readings are not checked).
	x, _ := v.(int64)
	if x > 1 && n.Scripts == protocol.Mutex {
		if err := b.clockRead(x*1000, sent); err != nil {
			return false, err
		}
	}
	return x > 0, nil
}

// clockRead checks a reading of the server's clock (microseconds) taken
// by a call sent at sent (see backend.Clock); a step forward is logged
// once.
func (b *Backend) clockRead(us int64, sent time.Time) error {
	ahead, err := b.Clock.Observe(us, sent, time.Now())
	if ahead > 0 && b.Hooks.Risk != nil {
		b.Hooks.Risk("the redis server's clock stepped forward: keys expire early on the server, so a lock may have been granted again before its holder's renewal noticed (keep the server's clock slewed by NTP, never stepped)")
	}
	return err
}

// Release drops a hold; a hand-over to a local waiter wakes it at once,
// the only news of it when the waiter is this Locker's.
func (b *Backend) Release(ctx context.Context, n protocol.Names, token string, _ time.Duration) error {
	var v any
	var err error
	sent := time.Now() // a hand-over in the reply happened after this
	if n.ReleaseArgs != nil {
		v, err = b.nd.Drv.Eval(ctx, n.Scripts.Release.Script, n.Keys, n.ReleaseArgs...)
	} else {
		var a protocol.Args
		a[protocol.ArgToken] = n.TokenArg
		a[protocol.ArgHandoff] = protocol.HandoffGrant
		a[protocol.ArgWindowMS] = b.WindowArg
		a[protocol.ArgSID] = b.SIDArg
		v, err = n.Scripts.Release.Eval(ctx, b.nd.Drv, n.Keys, &a)
	}
	if err != nil {
		// The release may have run and handed the lock to a waiter of
		// this Locker, which no notice tells then (release.lua): the
		// first local waiter asks Redis now, and once more a grant
		// window later, in case its call overtook the release (pooled
		// calls).
		ch := n.Channel // captured alone: capturing n would move it to the heap on every call
		b.nd.Hub.Recheck(ch)
		time.AfterFunc(b.Window+2*time.Millisecond, func() { b.nd.Hub.Recheck(ch) })
		return lockerr.Unavailable(err)
	}
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return lockerr.ErrNotHeld
		}
	case []any:
		// Handed to waiters, {0, token, fence, server_ms, pttl_ms, ...}
		// (a mutex's one, or permits): wake them here if they are ours.
		for g := x[min(len(x), 1):]; len(g) >= 4; g = g[4:] {
			token, _ := g[0].(string)
			fence, _ := g[1].(int64)
			server, _ := g[2].(int64)
			pttl, _ := g[3].(int64)
			b.nd.Hub.HandOver(n.Channel, token, hub.Grant{Fence: fence, Server: server, PTTL: time.Duration(pttl) * time.Millisecond, After: sent})
		}
	}
	return nil
}

// Keep drops a hold, keeping the lock for d after the last.
func (b *Backend) Keep(ctx context.Context, n protocol.Names, token string, _, d time.Duration) error {
	var a protocol.Args
	a[protocol.ArgToken] = n.TokenArg
	a[protocol.ArgKeepMS] = protocol.MS(d)
	v, err := n.Scripts.Keep.Eval(ctx, b.nd.Drv, n.Keys, &a)
	if err != nil {
		return lockerr.Unavailable(err)
	}
	if x, _ := v.(int64); x < 0 {
		return lockerr.ErrNotHeld
	}
	return nil
}

// PTTL returns the lease token has left.
func (b *Backend) PTTL(ctx context.Context, n protocol.Names, token string) (time.Duration, error) {
	cctx, cancel := b.Cfg.Bounds.Call(ctx)
	defer cancel()
	var a protocol.Args
	a[protocol.ArgToken] = token
	v, err := n.Scripts.PTTL.Eval(cctx, b.nd.Drv, n.Keys.First(n.Scripts.ExtendKeys), &a)
	if err != nil {
		return 0, lockerr.Unavailable(err)
	}
	if x, _ := v.(int64); x >= 0 {
		return time.Duration(x) * time.Millisecond, nil
	}
	return 0, lockerr.ErrNotHeld
}

// ValidUntil returns sent + ttl: one node's lease ends when Redis says; no
// drift allowance.
func (b *Backend) ValidUntil(sent time.Time, ttl time.Duration) time.Time { return sent.Add(ttl) }

// Records returns the node: one deployment keeps idempotency records there.
func (b *Backend) Records() (*backend.Node, error) { return b.nd, nil }

// Semaphores returns nil: one deployment keeps every lock kind.
func (b *Backend) Semaphores() error { return nil }

// Ping checks that the node answers (runs Check until it passed).
func (b *Backend) Ping(ctx context.Context) error {
	cctx, cancel := b.Cfg.Bounds.Call(ctx)
	defer cancel()
	return preflight.Failed(preflight.Ping(cctx, b.nd))
}

// Close closes the node's subscriber connection and driver.
func (b *Backend) Close() error { return b.nd.Close() }

// Rates returns the node: one deployment keeps rate keys there.
func (b *Backend) Rates() (*backend.Node, error) { return b.nd, nil }

// Check runs Locker.Check on the node.
func (b *Backend) Check(ctx context.Context) error {
	cctx, cancel := b.Cfg.Bounds.Call(ctx)
	defer cancel()
	return preflight.Failed(preflight.Check(cctx, b.nd))
}

// Healthy pings the node: one deployment is usable exactly when it answers.
func (b *Backend) Healthy(ctx context.Context) error { return b.Ping(ctx) }
