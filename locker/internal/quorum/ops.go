package quorum

import (
	"context"
	"slices"
	"time"

	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/protocol"
	"github.com/locktag/locktag/locker/internal/tally"
)

// The operations of a held Redlock lock: each fans out to every master and
// decides by tally.

// Reenter adds a hold on every master: held when a majority did.
func (b *Backend) Reenter(ctx context.Context, n protocol.Names, token string, ttl time.Duration) (int, bool, error) {
	try := b.try(ctx, n, token, ttl, 0, protocol.AcquireReenter, true)
	return try.holds, try.obtained, try.err
}

// Release drops one hold on every master: done when a majority released it;
// lockerr.ErrNotHeld when so many did not hold it that no majority is left.
func (b *Backend) Release(ctx context.Context, n protocol.Names, token string, ttl time.Duration) error {
	return b.drop(ctx, "release", ttl, protocol.Mutex.Release, n, token, releaseArgs(token))
}

// Keep is Release's twin for Lease.ReleaseAfter: done when a majority kept
// the lock. A master that missed it frees the lock at once, so the window
// holds while a majority keeps it.
func (b *Backend) Keep(ctx context.Context, n protocol.Names, token string, ttl, d time.Duration) error {
	var a protocol.Args
	a[protocol.ArgToken] = token
	a[protocol.ArgKeepMS] = protocol.MS(d)
	return b.drop(ctx, "keep", ttl, n.Scripts.Keep, n, token, &a)
}

// releaseArgs are a Redlock release's arguments for token: a free notice
// on release, no grant window.
func releaseArgs(token string) *protocol.Args {
	var a protocol.Args
	a[protocol.ArgToken] = token
	a[protocol.ArgHandoff] = protocol.HandoffNotify
	a[protocol.ArgWindowMS] = int64(0)
	return &a
}

// drop runs a script that drops a hold (a reply below zero: not held) on
// every master and tallies the replies.
func (b *Backend) drop(ctx context.Context, op string, ttl time.Duration, c *protocol.Call, n protocol.Names, token string, a *protocol.Args) error {
	res := b.fanout(ctx, b.nodeTimeout(ttl), c, n.Keys, a)
	b.lines.freed(n.Channel, token) // this process's next waiter for the key tries now (line.go)
	t := tally.Count(op, b.need, res, func(_ int, v any) (bool, error) {
		x, _ := v.(int64)
		return x >= 0, nil
	})
	switch {
	case t.Won():
		return nil
	case t.Refused():
		return lockerr.ErrNotHeld
	}
	return t.Err()
}

// Extend resets the lease on every master: held when a majority extended
// it; lost (false) when so many refused that no majority is left.
func (b *Backend) Extend(ctx context.Context, n protocol.Names, token string, ttl time.Duration) (bool, error) {
	var a protocol.Args
	a[protocol.ArgToken] = token
	a[protocol.ArgTTLMS] = protocol.MS(ttl)
	res := b.fanout(ctx, b.nodeTimeout(ttl), protocol.Mutex.Extend, n.Keys.First(1), &a)
	t := tally.Count("extend", b.need, res, func(_ int, v any) (bool, error) {
		x, _ := v.(int64)
		return x > 0, nil
	})
	switch {
	case t.Won():
		return true, nil
	case t.Refused():
		return false, nil
	}
	return false, t.Err()
}

// PTTL is the lease left on the majority: the quorum-th longest.
func (b *Backend) PTTL(ctx context.Context, n protocol.Names, token string) (time.Duration, error) {
	var a protocol.Args
	a[protocol.ArgToken] = token
	res := b.fanout(ctx, b.Cfg.Bounds.Timeout, protocol.Mutex.PTTL, n.Keys.First(1), &a)
	var left []time.Duration
	t := tally.Count("ttl", b.need, res, func(_ int, v any) (bool, error) {
		x, _ := v.(int64)
		if x < 0 {
			return false, nil
		}
		left = append(left, time.Duration(x)*time.Millisecond)
		return true, nil
	})
	switch {
	case t.Won():
		slices.Sort(left)
		return left[len(left)-b.need], nil
	case t.Broken():
		return 0, t.Err()
	}
	return 0, lockerr.ErrNotHeld
}
