package backend

import (
	"context"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/internal/protocol"
)

// Backend is where a Locker's locks live: single keeps them on one Redis
// deployment, with a first-come-first-served queue and hand-over in Redis;
// quorum keeps them on N independent masters by the Redlock algorithm.
// Everything that differs between the two is behind this interface: the
// Locker and Lease code above it reads along one path.
//
// Errors are final: they match ErrUnavailable when Redis failed (quorum:
// an unwrapped *tally.Error, which locker returns as its *QuorumError),
// except Reenter's, which Obtain turns into its own.
type Backend interface {
	// Obtain takes key's lock (names n) for the new owner token under t,
	// waiting up to t.Wait, and returns the grant; or an error matching
	// ErrNotObtained (busy, or ctx ended) or ErrUnavailable.
	Obtain(ctx context.Context, key string, n protocol.Names, token string, t Terms) (Held, error)
	// Reenter adds a hold for token, which holds the lock, and resets the
	// lease to ttl. ok is false when token no longer holds the lock.
	Reenter(ctx context.Context, n protocol.Names, token string, ttl time.Duration) (holds int, ok bool, err error)
	// Extend resets token's lease to ttl from now; false: refused, token
	// does not hold the lock.
	Extend(ctx context.Context, n protocol.Names, token string, ttl time.Duration) (bool, error)
	// Release drops one hold of token (whose lease is ttl); the last hold
	// frees the lock and hands it on. ErrNotHeld: token held nothing.
	Release(ctx context.Context, n protocol.Names, token string, ttl time.Duration) error
	// Keep drops one hold of token like Release, but the last hold keeps
	// the lock for d more instead of freeing it (n.Scripts.Keep is not nil).
	Keep(ctx context.Context, n protocol.Names, token string, ttl, d time.Duration) error
	// PTTL returns the lease token has left, or ErrNotHeld.
	PTTL(ctx context.Context, n protocol.Names, token string) (time.Duration, error)
	// ValidUntil is the conservative local end of a lease of ttl granted
	// by a call sent at sent.
	ValidUntil(sent time.Time, ttl time.Duration) time.Time
	// Semaphores returns nil when the backend keeps semaphores and
	// read/write locks (Params.Limit, Params.Mode), or an error matching
	// ErrKindUnsupported saying why not.
	Semaphores() error
	// Records returns the node idempotency records live on, or an error
	// matching ErrIdempotencyUnsupported saying why there is none.
	Records() (*Node, error)
	// Rates returns the node rate keys live on, or an error matching
	// ErrKindUnsupported saying why there is none.
	Rates() (*Node, error)
	// Ping checks that every node answers (and, until it passed once on
	// a node, runs Check there).
	Ping(ctx context.Context) error
	// Check runs Locker.Check on every node.
	Check(ctx context.Context) error
	// Healthy checks that enough nodes answer to obtain a lock: every
	// node for single, a majority for quorum.
	Healthy(ctx context.Context) error
	// Close closes the subscriber connections and the drivers.
	Close() error
}

// Admin is what the operator's calls (Inspect, List, ForceRelease) need
// of a backend, over key names the caller builds: the nodes its locks live
// on and how many must agree. Both backends implement it; the calls
// themselves are written once, above (locker's admin files).
type Admin interface {
	// Quorum returns the nodes a lock lives on and how many of them make
	// its state: one deployment and 1, or every Redlock master and the
	// majority.
	Quorum() (nodes []*Node, need int)
	// Handoff is the hand-over a force-release asks for, as its last two
	// script arguments: the queue's head becomes the owner for the grant
	// window (one deployment), or waiters are sent a free notice
	// (Redlock).
	Handoff() (mode string, window any)
	// Masters are the drivers List scans: every master of the deployment
	// (a Cluster's, through driver.Masters), or every Redlock master.
	Masters(ctx context.Context) ([]driver.Driver, error)
}

// MultiFast is the one-script path of ObtainMany: on a deployment whose
// keys all live on one node and whose scripts may name keys of several
// slots (a single server or a Sentinel set-up, not a Cluster), one round
// trip takes every lock when all are free and nobody waits for any.
// single implements it; quorum does not (each key is its own majority).
type MultiFast interface {
	// TakeAll runs multi_acquire.lua. ok is false, with nothing written,
	// when some lock is held or has waiters, or when the path is off
	// (err nil both times). fences are in the order of ns.
	TakeAll(ctx context.Context, ns []protocol.Names, tokens []string, ttl time.Duration) (fences []int64, ok bool, err error)
	// DropAll cleans up after a TakeAll whose outcome is unknown (err).
	DropAll(ns []protocol.Names, tokens []string, err error)
	// FastOn reports whether the path is on.
	FastOn() bool
}

// Held is a grant: a lock obtained with fencing token Fence for Granted,
// by a call sent (or a grant made) at At.
type Held struct {
	Fence   int64
	At      time.Time
	Granted time.Duration
}

// Terms are an Obtain call's Params after defaults.
type Terms struct {
	TTL      time.Duration
	Wait     time.Duration
	Watchdog bool
	// Call is storage for the context of this Obtain's acquire calls
	// (the first try, a waiter's re-checks: one at a time); nil: each
	// call allocates its own.
	Call *callctx.Deadline
	// Ref is the caller's, handed back to Hooks.Waiting.
	Ref any
	// Closing is closed when the Locker shuts down: a wait then ends with
	// lockerr.ErrClosed, leaving the queue as a cancelled one does.
	Closing <-chan struct{}
}
