package main

import (
	"context"
	"sync/atomic"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// --- redis/rueidis/rueidislock: a lock on rueidis' client-side caching ---

// rueidislockNoLoop sets LockerOption.NoLoopTracking (flag). Its default
// is false; rueidislock's README turns it on for Redis 7.0.5 and later.
var rueidislockNoLoop bool

// rueidislockLock holds a rueidislock Locker. WithContext waits for the
// lock, woken by the invalidation of the lock key (client-side caching);
// the returned cancel releases it and returns once the key is deleted.
type rueidislockLock struct{ l rueidislock.Locker }

// Lock bounds the wait by ctx, but not the lock: rueidislock ties a held
// lock to the context it was taken with (it is let go when that context
// ends, and its validity is cut to the context's deadline), while every
// other library's lease outlives the call that took it, and the burst
// gives the peers their wait as a deadline on ctx. So the lock is taken
// on a context that ctx cancels only until WithContext has returned.
func (r rueidislockLock) Lock(ctx context.Context, key string) (func() error, error) {
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	_, release, err := r.l.WithContext(lctx, key)
	if !stop() { // ctx ended while waiting: no lock, or one being let go
		if err == nil {
			release()
		}
		cancel()
		return nil, ctx.Err()
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return func() error {
		release()
		cancel()
		return nil
	}, nil
}

// openRueidislock is rueidislock on one server as its README sets it up
// for one: KeyMajority 1 (one key per lock), every other option its
// default (validity 5 s, extended every 2.5 s; a 20 ms bound on each
// acquire script; client tracking without NOLOOP unless
// -rueidislock-noloop). rueidislock sets its client's PipelineMultiplex
// to -1 (one connection, which also carries the invalidations).
func openRueidislock(addrs []string, _ int, reqs *atomic.Int64) (Lock, func(), error) {
	return rueidislockOn(addrs[:1], 1, reqs)
}

// rueidislockOn opens a Locker on a rueidis client of initAddrs (a Cluster
// client when they are Cluster nodes) that needs majority of its
// 2·majority−1 keys, counting every command sent through Do and DoMulti.
func rueidislockOn(initAddrs []string, majority int32, reqs *atomic.Int64) (Lock, func(), error) {
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: initAddrs},
		KeyMajority:    majority,
		NoLoopTracking: rueidislockNoLoop,
		ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(o)
			if err != nil {
				return nil, err
			}
			return countRueidis{c, reqs}, nil
		},
	})
	if err != nil {
		return nil, nil, err
	}
	return rueidislockLock{l}, l.Close, nil
}
