package locker

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// ErrQuorum: a Redlock operation did not reach a majority of the masters
// because some of them failed. Errors that match it are *QuorumError values
// and also match ErrUnavailable.
var ErrQuorum = errors.New("locker: quorum not reached")

// QuorumError reports a Redlock operation that failed on too many masters.
type QuorumError struct {
	Op   string  // "obtain", "release", "extend", "ttl"
	Need int     // the quorum: N/2+1
	OK   int     // masters that answered as hoped
	Errs []error // per master, in the order given; nil where it answered
}

// Error lists the operation, the count of masters that answered as hoped
// and each failing master's error.
func (e *QuorumError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "locker: quorum not reached: %s: %d of %d masters (need %d)", e.Op, e.OK, len(e.Errs), e.Need)
	for i, err := range e.Errs {
		if err != nil {
			fmt.Fprintf(&b, "; master %d: %v", i, err)
		}
	}
	return b.String()
}

// Unwrap makes a QuorumError match ErrQuorum and ErrUnavailable.
func (e *QuorumError) Unwrap() []error { return []error{ErrQuorum, ErrUnavailable} }

//go:embed scripts/raise.lua
var luaRaise string

var scriptRaise = newScript(luaRaise)

// NewRedlock returns a Locker that runs the Redlock algorithm over N
// independent Redis masters (N odd, typically 5): a lock is held when a
// majority (N/2+1) granted it within its validity, TTL - elapsed - drift.
// Every call fans out to all masters in parallel with a short per-master
// timeout (WithNodeTimeout); partial acquisitions are undone; release and
// renewal go to all masters; a renewal that loses the majority cancels the
// lease's context with ErrLockLost. See docs/scale-out.md for what Redlock
// assumes and what its fencing tokens guarantee.
func NewRedlock(pools []*redis.Pool, opts ...Option) *Locker {
	ds := make([]Driver, len(pools))
	for i, p := range pools {
		ds[i] = poolDriver(p, opts)
	}
	return newLocker(ds, opts)
}

// NewRedlockWithDrivers is NewRedlock on any Drivers.
func NewRedlockWithDrivers(ds []Driver, opts ...Option) *Locker { return newLocker(ds, opts) }

// validUntil is the conservative local end of a lease granted by a call
// sent at sent: Redlock also subtracts the clock drift allowance.
func (l *Locker) validUntil(sent time.Time, ttl time.Duration) time.Time {
	if !l.redlock() {
		return sent.Add(ttl)
	}
	return sent.Add(ttl - l.drift(ttl))
}

func (l *Locker) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*l.o.drift) + 2*time.Millisecond
}

func (l *Locker) nodeTimeout(ttl time.Duration) time.Duration {
	if l.o.nodeTimeout > 0 {
		return l.o.nodeTimeout
	}
	return min(max(ttl/10, 50*time.Millisecond), 500*time.Millisecond)
}

type nodeReply struct {
	v   any
	err error
}

// fanout runs s on every master in parallel, each call bounded by timeout.
func (l *Locker) fanout(ctx context.Context, timeout time.Duration, s *Script, keys []string, args ...any) []nodeReply {
	res := make([]nodeReply, len(l.nodes))
	var wg sync.WaitGroup
	for i, nd := range l.nodes {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			res[i].v, res[i].err = nd.drv.Eval(cctx, s, keys, args...)
		})
	}
	wg.Wait()
	return res
}

// quorumTry is the outcome of one acquire round.
type quorumTry struct {
	obtained bool
	fence    int64
	holds    int           // the hold count reached (re-entry)
	sent     time.Time     // when the round was sent
	until    time.Time     // local end of validity when obtained
	pttl     time.Duration // the shortest remaining lease of a busy master
	err      error         // a *QuorumError when too many masters failed
}

// tryQuorum runs acquire.lua on every master and decides by majority. A
// round that does not win undoes what it took.
func (l *Locker) tryQuorum(ctx context.Context, n names, token string, ttl, wait time.Duration, mode string, reentry bool) quorumTry {
	sent := time.Now()
	res := l.fanout(ctx, l.nodeTimeout(ttl), scriptAcquire, n.keys, token, ms(ttl), ms(wait), mode, n.channel, l.sidArg, l.windowArg)
	var out quorumTry
	out.sent = sent
	out.pttl = ttl
	errs := make([]error, len(res))
	took := make([]bool, len(res)) // holds this token now, or may (error)
	ok, failed := 0, 0
	same := true // every granting master minted the same token
	for i, nr := range res {
		r, err := nr.v, nr.err
		var rep reply
		if err == nil {
			rep, err = parseReply(r)
		}
		switch {
		case err != nil:
			errs[i], took[i] = err, !reentry
			failed++
		case rep.status == statusObtained || rep.status == statusReentered:
			ok++
			took[i] = true
			same = same && (ok == 1 || rep.fence == out.fence)
			out.fence = max(out.fence, rep.fence)
			out.holds = max(out.holds, int(rep.holds))
		default:
			if rep.pttl > 0 {
				out.pttl = min(out.pttl, rep.pttl)
			}
		}
	}
	out.until = l.validUntil(sent, ttl)
	if ok >= l.quorum && time.Until(out.until) > 0 {
		// When every granting master minted the same token, each counter
		// already holds it: nothing to write back (the steady state, since
		// the write-back levels the counters).
		if reentry || same || l.raiseFence(ctx, n, ttl, out.fence, took) {
			out.obtained = true
			return out
		}
	}
	l.undo(n, token, took)
	if failed > len(l.nodes)-l.quorum {
		out.err = &QuorumError{Op: "obtain", Need: l.quorum, OK: ok, Errs: errs}
	}
	return out
}

// raiseFence writes the lock's fencing token (the largest any master
// minted) back to the counters of the masters that granted it, and reports
// whether a majority took it. The next holder's majority shares at least one
// of those masters, whose counter then gives it a larger token.
func (l *Locker) raiseFence(ctx context.Context, n names, ttl time.Duration, fence int64, took []bool) bool {
	res := l.fanout(ctx, l.nodeTimeout(ttl), scriptRaise, n.keys, fence)
	ok := 0
	for i, nr := range res {
		if took[i] && nr.err == nil {
			ok++
		}
	}
	return ok >= l.quorum
}

// undo releases a token on the masters where it holds, or may hold, the
// lock; on a fresh context, since it must happen even when ctx ended.
func (l *Locker) undo(n names, token string, took []bool) {
	if !slices.Contains(took, true) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.o.callTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, nd := range l.nodes {
		if took[i] {
			wg.Go(func() { _, _ = nd.drv.Eval(ctx, scriptRelease, n.keys, token, n.channel, handoffNotify, 0) })
		}
	}
	wg.Wait()
}

// obtainQuorum is Obtain on Redlock. A busy Redlock lock is waited for by
// free notices: the waiter's failed round flags the lock on each master, the
// release then publishes "-" on the key's channel, and the first local waiter
// of each process tries again. Masters have no queue (their queues could
// hand the lock to different waiters and split the vote), so the order
// across processes is not first-come-first-served.
func (l *Locker) obtainQuorum(ctx context.Context, key string, t terms) (*Lease, error) {
	n := l.names(key)
	token := newToken()
	waitUntil := time.Now().Add(t.wait)
	mode := modeAcquire
	if t.wait > 0 {
		mode = modeNotify
	}
	var w *waiter
	subs := make([]member, len(l.nodes))
	defer func() {
		for i, m := range subs {
			l.nodes[i].hub.leave(m)
		}
	}()
	var timer *time.Timer
	queued := false // registered as a waiter on some master
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		sent := time.Now()
		try := l.tryQuorum(ctx, n, token, t.ttl, time.Until(waitUntil), mode, false)
		queued = queued || mode == modeNotify
		var err error
		switch left := time.Until(waitUntil); {
		case try.obtained:
			return l.newLease(ctx, key, n, token, try.fence, t, try.sent, t.ttl), nil
		case ctx.Err() != nil:
			err = errors.Join(ErrNotObtained, ctx.Err())
		case try.err != nil:
			err = try.err
		case left <= 0:
			err = ErrNotObtained
		}
		if err != nil {
			if queued {
				l.withdraw(n, token)
			}
			return nil, err
		}
		left := time.Until(waitUntil)
		if w == nil {
			defer l.tel.waiting(t.params)()
			w = newWaiter(token)
			missed := false
			for i, nd := range l.nodes {
				m, mi, err := nd.hub.join(ctx, n.channel, sent, w)
				if err != nil {
					continue // that master's notices are lost; the timer covers it
				}
				subs[i] = m
				missed = missed || mi
			}
			if missed {
				continue // a release may have come before the subscription
			}
		}
		// Re-check when the shortest lease would end (with jitter, so the
		// processes woken by an expiry do not all come at once), or at once on
		// a free notice.
		next := min(try.pttl+time.Duration(rand.Int64N(int64(try.pttl/10+time.Millisecond))), left)
		if timer == nil {
			timer = time.NewTimer(next)
		} else {
			timer.Reset(next)
		}
		select {
		case <-w.check:
		case <-timer.C:
		case <-ctx.Done():
			l.withdraw(n, token)
			return nil, errors.Join(ErrNotObtained, ctx.Err())
		}
	}
}

// withdraw takes a Redlock waiter out of every master's queue.
func (l *Locker) withdraw(n names, token string) {
	ctx, cancel := context.WithTimeout(context.Background(), l.o.callTimeout)
	defer cancel()
	l.fanout(ctx, l.o.callTimeout, scriptLeave, n.keys, token, modeDrop, n.channel, handoffNotify, 0)
}

// reenterQuorum adds a hold on every master for a nested Obtain.
func (l *Locker) reenterQuorum(ctx context.Context, root *Lease, ttl time.Duration) (reply, error) {
	try := l.tryQuorum(ctx, root.n, root.token, ttl, 0, modeReenter, true)
	switch {
	case try.obtained:
		return reply{status: statusReentered, fence: root.fence, holds: int64(try.holds)}, nil
	case try.err != nil:
		return reply{}, try.err
	}
	return reply{status: statusBusy}, nil
}

// releaseQuorum drops one hold on every master.
func (l *Locker) releaseQuorum(ctx context.Context, le *Lease, ttl time.Duration) error {
	res := l.fanout(ctx, l.nodeTimeout(ttl), scriptRelease, le.n.keys, le.token, le.n.channel, handoffNotify, 0)
	ok, notHeld, errs := 0, 0, make([]error, len(res))
	for i, nr := range res {
		switch v, _ := nr.v.(int64); {
		case nr.err != nil:
			errs[i] = nr.err
		case v < 0:
			notHeld++
		default:
			ok++
		}
	}
	switch {
	case ok >= l.quorum:
		return nil
	case notHeld > len(res)-l.quorum:
		return ErrNotHeld
	}
	return &QuorumError{Op: "release", Need: l.quorum, OK: ok, Errs: errs}
}

// extendQuorum resets the lease on every master: held when a majority
// extended it; lost (false) when so many refused that no majority is left.
func (l *Locker) extendQuorum(ctx context.Context, root *Lease, ttl time.Duration) (bool, error) {
	res := l.fanout(ctx, l.nodeTimeout(ttl), scriptExtend, root.n.keys[:1], root.token, ms(ttl))
	ok, refused, errs := 0, 0, make([]error, len(res))
	for i, nr := range res {
		switch v, _ := nr.v.(int64); {
		case nr.err != nil:
			errs[i] = nr.err
		case v == 1:
			ok++
		default:
			refused++
		}
	}
	switch {
	case ok >= l.quorum:
		return true, nil
	case refused > len(res)-l.quorum:
		return false, nil
	}
	return false, &QuorumError{Op: "extend", Need: l.quorum, OK: ok, Errs: errs}
}

// pttlQuorum is the lease left on the majority: the quorum-th longest.
func (l *Locker) pttlQuorum(ctx context.Context, le *Lease) (time.Duration, error) {
	res := l.fanout(ctx, l.o.callTimeout, scriptPTTL, le.n.keys[:1], le.token)
	var held []time.Duration
	failed, errs := 0, make([]error, len(res))
	for i, nr := range res {
		if nr.err != nil {
			errs[i] = nr.err
			failed++
			continue
		}
		if v, _ := nr.v.(int64); v >= 0 {
			held = append(held, time.Duration(v)*time.Millisecond)
		}
	}
	if len(held) >= l.quorum {
		slices.Sort(held)
		return held[len(held)-l.quorum], nil
	}
	if failed > len(res)-l.quorum {
		return 0, &QuorumError{Op: "ttl", Need: l.quorum, OK: len(held), Errs: errs}
	}
	return 0, ErrNotHeld
}
