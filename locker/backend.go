package locker

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"sync/atomic"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/internal/hub"
	"github.com/locktag/locktag/locker/internal/scripts"
)

// backend is where a Locker's locks live: single keeps them on one Redis
// deployment, with a first-come-first-served queue and hand-over in Redis;
// quorum keeps them on N independent masters by the Redlock algorithm.
// Everything that differs between the two is behind this interface: the
// Locker and Lease code above it reads along one path.
//
// Errors are final: they match ErrUnavailable (quorum: *QuorumError) when
// Redis failed, except reenter's, which Obtain turns into its own.
type backend interface {
	// obtain takes key's lock (names n) for the new owner token under t,
	// waiting up to t.wait, and returns the grant; or an error matching
	// ErrNotObtained (busy, or ctx ended) or ErrUnavailable.
	obtain(ctx context.Context, key string, n names, token string, t terms) (held, error)
	// reenter adds a hold for token, which holds the lock, and resets the
	// lease to ttl. ok is false when token no longer holds the lock.
	reenter(ctx context.Context, n names, token string, ttl time.Duration) (holds int, ok bool, err error)
	// extend resets token's lease to ttl from now; false: refused, token
	// does not hold the lock.
	extend(ctx context.Context, n names, token string, ttl time.Duration) (bool, error)
	// release drops one hold of token (whose lease is ttl); the last hold
	// frees the lock and hands it on. ErrNotHeld: token held nothing.
	release(ctx context.Context, n names, token string, ttl time.Duration) error
	// keep drops one hold of token like release, but the last hold keeps
	// the lock for d more instead of freeing it (n.sc.Keep is not nil).
	keep(ctx context.Context, n names, token string, ttl, d time.Duration) error
	// pttl returns the lease token has left, or ErrNotHeld.
	pttl(ctx context.Context, n names, token string) (time.Duration, error)
	// validUntil is the conservative local end of a lease of ttl granted
	// by a call sent at sent.
	validUntil(sent time.Time, ttl time.Duration) time.Time
	// semaphores returns nil when the backend keeps semaphores and
	// read/write locks (Params.Limit, Params.Mode), or an error matching
	// ErrKindUnsupported saying why not.
	semaphores() error
	// records returns the node idempotency records live on, or an error
	// matching ErrIdempotencyUnsupported saying why there is none.
	records() (*node, error)
	// rates returns the node rate keys live on, or an error matching
	// ErrKindUnsupported saying why there is none (rate.go).
	rates() (*node, error)
	// ping checks that every node answers (and, until it passed once on
	// a node, runs check there).
	ping(ctx context.Context) error
	// check runs Locker.Check on every node.
	check(ctx context.Context) error
	// healthy checks that enough nodes answer to obtain a lock: every
	// node for single, a majority for quorum (see health.go).
	healthy(ctx context.Context) error
	// close closes the subscriber connections and the drivers.
	close() error

	// The operator calls (admin.go): force frees name's lock whoever
	// holds it and returns the holders freed; inspect reads its state;
	// masters lists the nodes List scans.
	force(ctx context.Context, l *Locker, name, reason string) ([]freed, error)
	inspect(ctx context.Context, l *Locker, name string) (*State, error)
	masters(ctx context.Context) ([]driver.Driver, error)
}

// held is a grant: a lock obtained with fencing token fence for granted,
// by a call sent (or a grant made) at at.
type held struct {
	fence   int64
	at      time.Time
	granted time.Duration
}

// terms are an Obtain call's Params after defaults.
type terms struct {
	ttl      time.Duration
	wait     time.Duration
	watchdog bool
	params   Params // as given, for telemetry
	// call is storage for the context of this Obtain's acquire calls
	// (the first try, a waiter's re-checks: one at a time); nil: each
	// call allocates its own.
	call *callctx.Deadline
}

// shared is what a Locker's backend and hubs share with it.
type shared struct {
	o   *options
	tel *telemetry
	sid string // names this Locker's waiters in queue entries (see hub)
	// lastKey: a mutex's names carry a fourth key, prefix{key}:f, where a
	// release leaves the lock for the rest of its lease, for its fencing
	// token (gone in value.lua). Set on Redlock, whose masters each mint a token: the next
	// holder's majority shares a master with the last one, which must
	// remember that token to mint a larger one whatever its clock says.
	lastKey bool
	// Script arguments made once: boxing them per call would allocate.
	sidArg, windowArg any
	// checkScript is check.lua under a comment naming this Locker, so
	// that its first run meets NOSCRIPT and exercises the EVAL fallback;
	// checkCommands are its command arguments (check.go).
	checkScript   *driver.Script
	checkCommands []any
	// The last two millisecond arguments boxed (see msArg).
	msBoxes [2]atomic.Pointer[msBox]
	msNext  atomic.Uint32
}

// msBox is a duration in milliseconds as a script argument.
type msBox struct {
	ms  int64
	arg any
}

// msArg returns scripts.MS(d) as a script argument. Most calls pass the same
// few values (a route's TTL and wait), so the last two boxed are reused:
// an int64 above 255 costs an allocation each time it is boxed.
func (sh *shared) msArg(d time.Duration) any {
	m := scripts.MS(d)
	for i := range sh.msBoxes {
		if b := sh.msBoxes[i].Load(); b != nil && b.ms == m {
			return b.arg
		}
	}
	b := &msBox{ms: m, arg: m}
	// Round robin: a TTL and a wait that alternate keep one slot each.
	sh.msBoxes[sh.msNext.Add(1)%uint32(len(sh.msBoxes))].Store(b)
	return b.arg
}

// node is one Redis deployment (or Redlock master) with its shared
// subscriber connection.
type node struct {
	drv driver.Driver
	hub *hub.Hub
	sh  *shared
	// capable is set once Locker.Check passed on the node (check.go).
	capable atomic.Bool
}

func newNode(d driver.Driver, sh *shared) *node {
	d = callctx.Limit(d, sh.o.maxCalls)
	return &node{drv: d, hub: hub.New(d, hub.Config{Bounds: sh.o.bounds(), Linger: sh.o.linger, SID: sh.sid}), sh: sh}
}

// ping runs Locker.Check on the node until it has passed once, and a
// trivial script after that: a start-up Ping or the first health checks
// find a server that cannot serve the locker, and later health checks
// cost one call.
func (nd *node) ping(ctx context.Context) error {
	if !nd.capable.Load() {
		return nd.check(ctx)
	}
	_, err := nd.drv.Eval(ctx, scripts.Ping, driver.Keys{})
	return err
}

// masters are the node's masters when its driver exposes them
// (driver.Masters: a Cluster), else the node itself.
func (nd *node) masters(ctx context.Context) ([]driver.Driver, error) {
	d := nd.drv
	if bd, ok := d.(*callctx.Limited); ok {
		d = bd.Driver // WithMaxConcurrentCalls's wrapper hides the driver's Masters
	}
	if m, ok := d.(driver.Masters); ok {
		return m.Masters(ctx)
	}
	return []driver.Driver{nd.drv}, nil
}

// close closes the node's subscriber connection and its driver.
func (nd *node) close() error {
	return errors.Join(nd.hub.Close(), callctx.CloseDriver(nd.drv))
}

// tokenLen is the length of an owner token: 128 bits in base64url.
const tokenLen = 22

// newToken returns 128 random bits, base64url-encoded.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand documents it)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
