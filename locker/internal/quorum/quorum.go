// Package quorum is the Redlock backend over N independent masters: every
// call fans out to all masters in parallel, each bounded by a short
// per-master timeout, and every decision is a tally (package tally). It
// implements backend.Backend and backend.Admin; it keeps mutexes only.
package quorum

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/hub"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/preflight"
	"github.com/locktag/locktag/locker/internal/protocol"
	"github.com/locktag/locktag/locker/internal/tally"
)

// Backend is the Redlock backend over N independent masters: a lock is
// held when a majority (N/2+1) granted it within its validity, TTL -
// elapsed - drift. Every call fans out to all masters in parallel with a
// short per-master timeout; every decision is a tally (package tally).
type Backend struct {
	*backend.Shared
	nodes []*backend.Node
	need  int // len(nodes)/2 + 1
	lines lines
}

// New returns the Redlock backend over nodes, one per master.
func New(sh *backend.Shared, nodes []*backend.Node) *Backend {
	return &Backend{Shared: sh, nodes: nodes, need: len(nodes)/2 + 1}
}

// ValidUntil subtracts the clock drift allowance from the lease.
func (b *Backend) ValidUntil(sent time.Time, ttl time.Duration) time.Time {
	return sent.Add(ttl - b.drift(ttl))
}

func (b *Backend) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*b.Cfg.Drift) + 2*time.Millisecond
}

func (b *Backend) nodeTimeout(ttl time.Duration) time.Duration {
	if b.Cfg.NodeTimeout > 0 {
		return b.Cfg.NodeTimeout
	}
	return min(max(ttl/10, 50*time.Millisecond), 500*time.Millisecond)
}

// fanout runs s on every master in parallel, each call bounded by timeout.
func (b *Backend) fanout(ctx context.Context, timeout time.Duration, c *protocol.Call, keys driver.Keys, a *protocol.Args) []tally.Reply {
	return backend.Fanout(ctx, b.nodes, timeout, c, keys, a)
}

// quorumTry is the outcome of one acquire round.
type quorumTry struct {
	obtained bool
	fence    int64
	holds    int           // the hold count reached (re-entry)
	sent     time.Time     // when the round was sent
	pttl     time.Duration // the shortest remaining lease of a busy master
	err      error         // a *tally.Error when too many masters failed
}

// try runs acquire.lua on every master and decides by majority. A round
// that does not win undoes what it took.
func (b *Backend) try(ctx context.Context, n protocol.Names, token string, ttl, wait time.Duration, mode protocol.AcquireMode, reentry bool) quorumTry {
	out := quorumTry{sent: time.Now(), pttl: ttl}
	var a protocol.Args
	n.AcquireArgs(&a, protocol.MS(ttl), protocol.MS(wait), mode.Arg(), b.SIDArg, b.WindowArg)
	a[protocol.ArgToken] = token
	res := b.fanout(ctx, b.nodeTimeout(ttl), protocol.Mutex.Acquire, n.Keys, &a)
	took := make([]bool, len(res)) // holds this token now, or may (error)
	granted := 0
	same := true // every granting master minted the same token
	t := tally.Count("obtain", b.need, res, func(i int, v any) (bool, error) {
		rep, err := protocol.ParseReply(v, ttl)
		if err != nil {
			return false, err
		}
		if rep.Status != protocol.StatusObtained && rep.Status != protocol.StatusReentered {
			if rep.PTTL > 0 {
				out.pttl = min(out.pttl, rep.PTTL)
			}
			return false, nil
		}
		granted++
		took[i] = true
		same = same && (granted == 1 || rep.Fence == out.fence)
		out.fence = max(out.fence, rep.Fence)
		out.holds = max(out.holds, int(rep.Holds))
		return true, nil
	})
	for i, err := range t.Errs {
		// A master whose reply was lost may have run the script: its hold
		// is undone with the rest, or a re-entry left there would outlive
		// the last release (and a retried re-entry count one hold too
		// many). Only a call never sent certainly changed nothing, and a
		// re-entry's undo there would drop the outer hold instead.
		took[i] = took[i] || (err != nil && !(reentry && errors.Is(err, lockerr.ErrNotSent)))
	}
	if t.Won() && time.Until(b.ValidUntil(out.sent, ttl)) > 0 {
		// When every granting master minted the same token, each counter
		// already holds it: nothing to write back (the steady state, since
		// the write-back levels the counters).
		if reentry || same || b.raiseFence(ctx, n, token, ttl, out.fence, took) {
			out.obtained = true
			return out
		}
	}
	if t.Broken() && !reentry {
		// Too many masters failed: obtain returns and the token is not
		// used again, so the clean-up need not hold the caller up.
		out.err = t.Err()
		go b.undo(n, token, took)
		return out
	}
	b.undo(n, token, took)
	if t.Broken() {
		out.err = t.Err()
	}
	return out
}

// raiseFence writes the lock's fencing token (the largest any master
// minted) back into the lock on the masters that granted it, and reports
// whether a majority took it. The next holder's majority shares at least one
// of those masters, whose lock (or what its release leaves there until
// the lease would have ended: gone in last.lua) then gives it a larger
// token.
func (b *Backend) raiseFence(ctx context.Context, n protocol.Names, token string, ttl time.Duration, fence int64, took []bool) bool {
	var a protocol.Args
	a[protocol.ArgToken] = token
	a[protocol.ArgFence] = fence
	res := b.fanout(ctx, b.nodeTimeout(ttl), protocol.Raise, n.Keys.First(1), &a)
	return tally.Count("raise", b.need, res, func(i int, _ any) (bool, error) { return took[i], nil }).Won()
}

// undo releases a token on the masters where it holds, or may hold, the
// lock, leaving its fencing token there as a release does (gone in
// last.lua); on a fresh context, since it must happen even when ctx
// ended.
func (b *Backend) undo(n protocol.Names, token string, took []bool) {
	if !slices.Contains(took, true) {
		return
	}
	ctx, cancel := b.Cfg.Bounds.Cleanup(context.Background())
	defer cancel()
	a := releaseArgs(token)
	var wg sync.WaitGroup
	for i, nd := range b.nodes {
		if took[i] {
			wg.Go(func() { _, _ = protocol.Mutex.Release.Eval(ctx, nd.Drv, n.Keys, a) })
		}
	}
	wg.Wait()
}

// Obtain is Locker.Obtain on Redlock. A busy Redlock lock is waited for by free
// notices: the waiter's failed round flags the lock on each master, the
// release then publishes "-" on the key's channel, and the leader of the
// key's line in each process (line.go) tries again; a release in this
// process wakes it directly. Masters have no queue (their queues could
// hand the lock to different waiters and split the vote), so the order
// across processes is not first-come-first-served; within a process it is.
func (b *Backend) Obtain(ctx context.Context, key string, n protocol.Names, token string, t backend.Terms) (backend.Held, error) {
	if t.Wait <= 0 {
		try := b.try(ctx, n, token, t.TTL, 0, protocol.AcquireNew, false)
		switch {
		case try.obtained:
			return backend.Held{Fence: try.fence, At: try.sent, Granted: t.TTL}, nil
		case ctx.Err() != nil:
			return backend.Held{}, errors.Join(lockerr.ErrNotObtained, ctx.Err())
		case try.err != nil:
			return backend.Held{}, try.err
		}
		return backend.Held{}, lockerr.ErrNotObtained
	}
	waitUntil := time.Now().Add(t.Wait)
	w := hub.NewWaiter(token)
	tn := b.lines.enter(n.Channel, w)
	var h backend.Held
	defer func() { b.lines.leave(n.Channel, tn, token, h.Granted > 0, h.At.Add(h.Granted)) }()
	select {
	case <-tn.lead:
	default:
		tn.waiting = true
		defer b.Waiting(t)()
		timer := time.NewTimer(time.Until(waitUntil))
		defer timer.Stop()
		select {
		case <-tn.lead:
		case <-timer.C:
			return backend.Held{}, lockerr.ErrNotObtained
		case <-ctx.Done():
			return backend.Held{}, errors.Join(lockerr.ErrNotObtained, ctx.Err())
		case <-t.Closing:
			return backend.Held{}, lockerr.ErrClosed
		}
	}
	var err error
	h, err = b.lead(ctx, n, token, t, waitUntil, w, tn)
	return h, err
}

// lead is Obtain's wait as the leader of its key's line: try, and while
// the lock is busy wait for a free notice, a local release or the shortest
// lease's end.
func (b *Backend) lead(ctx context.Context, n protocol.Names, token string, t backend.Terms, waitUntil time.Time, w *hub.Waiter, tn *turn) (backend.Held, error) {
	subs := make([]hub.Member, len(b.nodes))
	joined := false
	defer func() {
		for i, m := range subs {
			b.nodes[i].Hub.Leave(m)
		}
	}()
	join := func(since time.Time) (missed bool) {
		joined = true
		for i, nd := range b.nodes {
			m, mi, err := nd.Hub.Join(ctx, n.Channel, since, w)
			if err != nil {
				continue // that master's notices are lost; the timer covers it
			}
			subs[i] = m
			missed = missed || mi
		}
		return missed
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	wait := func(d time.Duration) error {
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-w.Check:
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-t.Closing:
			return lockerr.ErrClosed
		}
		return nil
	}
	if tn.held {
		// The lock is held in this process: its release here wakes this
		// one (line.go).
		if !tn.waiting {
			tn.waiting = true
			defer b.Waiting(t)()
		}
		join(time.Now())
		d := time.Until(tn.until)
		if err := wait(min(d+jitter(d), time.Until(waitUntil))); err != nil {
			return backend.Held{}, errors.Join(lockerr.ErrNotObtained, err)
		}
	}
	for {
		sent := time.Now()
		// Every round passes the first's wait: it names the token's queue
		// entries (entry in common.lua).
		try := b.try(ctx, n, token, t.TTL, t.Wait, protocol.AcquireNotify, false)
		var err error
		switch left := time.Until(waitUntil); {
		case try.obtained:
			return backend.Held{Fence: try.fence, At: try.sent, Granted: t.TTL}, nil
		case ctx.Err() != nil:
			err = errors.Join(lockerr.ErrNotObtained, ctx.Err())
		case try.err != nil:
			err = try.err
		case left <= 0:
			err = lockerr.ErrNotObtained
		}
		if err != nil {
			// Every round registers the token on the masters; it is done:
			// withdraw it off the caller's path.
			go b.withdraw(n, token)
			return backend.Held{}, err
		}
		if !joined {
			if !tn.waiting {
				tn.waiting = true
				defer b.Waiting(t)()
			}
			if join(sent) {
				continue // a release may have come before the subscription
			}
		}
		// Re-check when the shortest lease would end (with jitter, so the
		// processes woken by an expiry do not all come at once), or at once on
		// a free notice.
		if err := wait(min(try.pttl+jitter(try.pttl), time.Until(waitUntil))); err != nil {
			go b.withdraw(n, token)
			return backend.Held{}, errors.Join(lockerr.ErrNotObtained, err)
		}
	}
}

// jitter is a random delay of up to a tenth of d (and a millisecond).
func jitter(d time.Duration) time.Duration {
	return time.Duration(rand.Int64N(int64(max(d, 0)/10 + time.Millisecond)))
}

// withdraw takes a Redlock waiter out of every master's queue.
func (b *Backend) withdraw(n protocol.Names, token string) {
	ctx, cancel := b.Cfg.Bounds.Cleanup(context.Background())
	defer cancel()
	var a protocol.Args
	a[protocol.ArgToken] = token
	a[protocol.ArgMode] = protocol.LeaveReleaseGrant.Arg()
	a[protocol.ArgHandoff] = protocol.HandoffNotify
	a[protocol.ArgWindowMS] = int64(0)
	n.EntryArgs(&a) // its queue entry's: the ttl, wait and sid try passes
	b.fanout(ctx, b.Cfg.Bounds.Timeout, protocol.Mutex.Leave, n.Keys, &a)
}

// Semaphores refuses: a permit set kept by quorum would need each master
// to agree on which waiters hold the N permits; not implemented.
func (b *Backend) Semaphores() error {
	return fmt.Errorf("%w: Redlock keeps no semaphores or read/write locks (Params.Limit, Params.Mode); use a Locker from New", lockerr.ErrKindUnsupported)
}

// Records refuses: Redlock keeps no idempotency records (see the error).
func (b *Backend) Records() (*backend.Node, error) {
	return nil, fmt.Errorf("%w: Redlock (NewRedlock) keeps no idempotency records: "+
		"a record on one master is lost or split by that master's failover, so a key could execute twice; "+
		"use a Locker from New on one Redis deployment for idempotency", lockerr.ErrIdempotencyUnsupported)
}

// Ping checks that every master answers.
func (b *Backend) Ping(ctx context.Context) error {
	return preflight.Failed(errors.Join(b.everyMaster(ctx, preflight.Ping)...))
}

// Close closes every master's subscriber connection and driver.
func (b *Backend) Close() error {
	var errs []error
	for _, nd := range b.nodes {
		errs = append(errs, nd.Close())
	}
	return errors.Join(errs...)
}
