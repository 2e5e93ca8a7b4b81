package locker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/callctx"
	"github.com/locktag/locktag/locker/internal/hub"
	"github.com/locktag/locktag/locker/internal/logs"
	"github.com/locktag/locktag/locker/internal/protocol"
	"github.com/locktag/locktag/locker/internal/quorum"
	"github.com/locktag/locktag/locker/internal/single"
)

// Locker obtains locks on one Redis deployment (New), or on N independent
// masters with the Redlock algorithm (NewRedlock). It is safe for concurrent
// use; create one per process and share it. Close it at shutdown.
type Locker struct {
	o    *options // &opts
	opts options
	tel  *telemetry
	log  logs.Logger
	sh   *backend.Shared // what the backend and its nodes share with the Locker
	be   backend.Backend
	// ctl are the hubs whose listeners carry force-release notices (see
	// control.go): the one node's, or every Redlock master's. leases are
	// the live root leases they are matched against.
	ctl    []*hub.Hub
	leases leaseTable
	// lockerLabel is WithLabel's label as a script argument, nil for none.
	lockerLabel any
	// closing is closed when Shutdown starts; closed is set then too, and
	// shut is closed when the shutdown is over (see shutdown.go).
	closing  chan struct{}
	closed   atomic.Bool
	shutOnce sync.Once
	shut     chan struct{}
	shutErr  error
	// protocolLogged: a record of another protocol was logged (protocolMet).
	protocolLogged atomic.Bool
	// risks are what Check found and accepted, each logged once (risks.go).
	risks riskSet
}

// New returns a Locker on one Redis deployment reached through d: a single
// server, a Sentinel set-up or a Cluster, as the driver reaches it. On a
// redigo pool:
//
//	lk, err := locker.New(redigo.New(pool))
//
// New does not connect (see Ping). It returns an error wrapping
// ErrBadOption, naming each, when d is nil, when d's own options are
// invalid (driver.Validator), or when an option has an invalid value or
// applies to Redlock only (WithDriftFactor, WithNodeTimeout).
func New(d driver.Driver, opts ...Option) (*Locker, error) {
	o, errs := evaluateOptions(opts)
	for _, name := range o.redlockOnly {
		errs = append(errs, fmt.Errorf("%w: %s applies to NewRedlock only", ErrBadOption, name))
	}
	if err := checkDriver(d); err != nil {
		errs = append(errs, err)
	}
	if o.ackReplicas > 0 {
		if _, ok := d.(driver.Acker); !ok && d != nil {
			errs = append(errs, fmt.Errorf("%w: WithReplicaAck: driver %T cannot WAIT on a script's connection (driver.Acker)", ErrBadOption, d))
		}
		if o.ackTimeout >= o.callTimeout {
			errs = append(errs, fmt.Errorf("%w: WithReplicaAck(%d, %v): the timeout must be below the call timeout %v (WithCallTimeout)",
				ErrBadOption, o.ackReplicas, o.ackTimeout, o.callTimeout))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	l := newLocker(o, false)
	nd := backend.New(d, l.sh)
	l.control(nd)
	// A driver that spreads keys over masters (Cluster) refuses scripts
	// whose keys are in several slots: ObtainMany goes key by key there.
	// So it does under WithReplicaAck, where each key's acquisition is
	// acknowledged on its own.
	_, spread := d.(driver.Masters)
	l.be = single.New(l.sh, nd, !spread && o.ackReplicas == 0)
	return l, nil
}

// NewRedlock returns a Locker that runs the Redlock algorithm over N
// independent masters (N odd, typically 5), one driver each: a lock is held
// when a majority granted it within its validity (TTL - elapsed - drift).
// Every call fans out to all masters with a short per-master timeout
// (WithNodeTimeout); partial acquisitions are undone. It keeps mutexes
// only, and no idempotency records or rate limits. It returns an error
// wrapping ErrBadOption for no, a nil or a misconfigured driver, or an
// invalid option. See docs/scale-out.md#redlock.
func NewRedlock(ds []driver.Driver, opts ...Option) (*Locker, error) {
	o, errs := evaluateOptions(opts)
	for _, name := range o.singleOnly {
		errs = append(errs, fmt.Errorf("%w: %s applies to New only", ErrBadOption, name))
	}
	if len(ds) == 0 {
		errs = append(errs, fmt.Errorf("%w: NewRedlock: no drivers", ErrBadOption))
	}
	for i, d := range ds {
		if err := checkDriver(d); err != nil {
			errs = append(errs, fmt.Errorf("master %d: %w", i, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	l := newLocker(o, true)
	nodes := make([]*backend.Node, len(ds))
	for i, d := range ds {
		nodes[i] = backend.New(d, l.sh)
		l.control(nodes[i])
	}
	l.be = redlock{quorum.New(l.sh, nodes)} // its quorum errors made *QuorumError
	return l, nil
}

// checkDriver returns why d cannot be used, or nil.
func checkDriver(d driver.Driver) error {
	if d == nil {
		return fmt.Errorf("%w: nil driver", ErrBadOption)
	}
	if v, ok := d.(driver.Validator); ok {
		return v.Validate()
	}
	return nil
}

// newLocker returns a Locker with options o and no backend yet; lastKey
// for Redlock (see protocol.KeyLayout).
func newLocker(o options, lastKey bool) *Locker {
	l := &Locker{opts: o, closing: make(chan struct{}), shut: make(chan struct{})}
	l.o = &l.opts
	l.tel = newTelemetry(l.o)
	l.log = logs.Logger{L: o.logger, Keys: o.keyAttribute}
	l.sh = backend.NewShared(backend.Config{
		Prefix:        o.prefix,
		Bounds:        o.bounds(),
		Linger:        o.linger,
		MaxCalls:      o.maxCalls,
		AckReplicas:   o.ackReplicas,
		AckTimeout:    o.ackTimeout,
		Drift:         o.drift,
		NodeTimeout:   o.nodeTimeout,
		AllowEviction: o.allowEvict,
	}, o.grantWindow, lastKey, backend.Hooks{Waiting: l.waiting, Risk: l.risk, Skipped: l.log.Skipped})
	l.log.SID = l.sh.SID
	l.sh.Clock.Tolerance = o.clockStep
	l.sh.Layout.Bridge = o.bridge
	if l.o.label != "" {
		l.lockerLabel = l.o.label
	}
	return l
}

// ID is this Locker's instance id, a random UUID made by New: it names the
// Locker's waiters in Redis queue entries, and its log records
// (locktag.locker.id) and the ops page carry it, so an operator can tell
// which process a record or a page came from.
func (l *Locker) ID() string { return l.sh.SID }

// Ping checks that every Redis node answers (credentials, TLS, network) by
// running a trivial script, and returns an error matching ErrUnavailable
// when one does not. Until Check has passed on a node, Ping runs Check
// there instead, and returns its ErrUnsupported too. New does not
// connect; call Ping at start-up to fail there rather than on the first
// request.
func (l *Locker) Ping(ctx context.Context) error { return l.be.Ping(ctx) }

// Params are the terms of one Obtain call. The zero value asks for a
// watchdog lease and does not wait.
type Params struct {
	// TTL is a fixed lease: the lock ends TTL after it was obtained unless
	// extended (the context is cancelled with ErrLockLost). Zero is
	// watchdog mode: a lease renewed in the background until Release.
	TTL time.Duration
	// Wait is how long to wait for a busy lock. Zero fails at once with
	// ErrNotObtained. The wait never outlasts ctx.
	Wait time.Duration
	// Name is the low-cardinality name events carry (the route or full
	// method for the adapters); default Template, or "locker".
	Name string
	// Template is the key template the name was made from. Optional.
	Template string
	// Limit, when above zero, makes the lock a semaphore: up to Limit
	// holders of key at once, each with a lease of its own. Zero is a
	// mutex. Callers of one key should agree on it. Not on Redlock.
	Limit int
	// Mode, Read or Write, makes the lock a read/write lock: many readers
	// or one writer, first come first served across both. The zero value
	// is a mutex. Not with Limit; not on Redlock.
	Mode Mode
	// Label describes the holder for operators (Holder.Label, after
	// WithLabel's; the guards set the route and trace id). Optional; cut
	// to MaxLabel bytes.
	Label string

	keys int // distinct keys of an ObtainMany call (telemetry's kind "multi"); 0 for Obtain
}

// Mode is a hold of a read/write lock (Params.Mode).
type Mode uint8

// The modes.
const (
	Exclusive Mode = iota // a mutex (the default)
	Read                  // shared with other readers
	Write                 // alone, and fenced
)

// Supports returns nil when l can obtain locks with p's kind, and
// otherwise an error matching ErrKindUnsupported (a Redlock Locker and
// p.Limit > 0) or ErrBadLimit saying why. Guards call it when they are
// built, so a service refuses to start instead of failing every request.
func (l *Locker) Supports(p Params) error {
	switch {
	case p.Limit < 0:
		return fmt.Errorf("%w: %d is negative", ErrBadLimit, p.Limit)
	case p.Limit > 0 && p.Mode != Exclusive:
		return fmt.Errorf("%w: a limit with a read/write mode", ErrBadLimit)
	case p.Mode > Write:
		return fmt.Errorf("%w: unknown mode %d", ErrBadOption, p.Mode)
	case p.Limit > 0, p.Mode != Exclusive:
		return l.be.Semaphores()
	}
	return nil
}

// Obtain takes the lock named key. It returns a Lease, or an error matching
// ErrNotObtained (busy; joined with ctx.Err() when ctx ended), ErrUnavailable
// (Redis failed; the lock is not held) or ErrEmptyKey. If ctx carries a
// lease of this Locker for key, Obtain re-enters it (the hold count goes
// up; the last Release frees it). A waiting Obtain queues first come first
// served in Redis and is handed the lock on release, notified through one
// shared subscriber connection, never by polling. See docs/locking.md.
func (l *Locker) Obtain(ctx context.Context, key string, p Params) (*Lease, error) {
	start := time.Now()
	span := l.tel.startObtain(ctx)
	le, err := l.obtain(ctx, key, p)
	l.tel.endObtain(span, start, key, p, le, err)
	if err != nil {
		l.protocolMet(ctx, err)
	}
	return le, err
}

func (l *Locker) obtain(ctx context.Context, key string, p Params) (*Lease, error) {
	if key == "" {
		return nil, ErrEmptyKey
	}
	if err := ctx.Err(); err != nil {
		return nil, errors.Join(ErrNotObtained, err)
	}
	if l.closed.Load() {
		return nil, ErrClosed
	}
	family := protocol.FamilyMutex
	if p.Limit != 0 || p.Mode != Exclusive {
		if err := l.Supports(p); err != nil {
			return nil, err
		}
		family = protocol.FamilySemaphore
		if p.Mode != Exclusive {
			family = protocol.FamilyRW
		}
	}
	if held := heldIn(ctx, l, key, family); held != nil {
		if p.Mode == Write && held.mode == Read {
			return nil, errors.Join(ErrNotObtained, ErrWriteInRead)
		}
		return l.reenter(ctx, held, p)
	}
	t := l.terms(p)
	// The lease is allocated now: its storage holds the holder's names
	// and the first call's context and arguments (protocol.Buf).
	le := new(Lease)
	var n protocol.Names
	var token string
	switch family {
	case protocol.FamilyMutex:
		n, token = l.sh.Layout.Mutex(key, &le.buf)
	case protocol.FamilySemaphore:
		n, token = l.sh.Layout.Semaphore(key, p.Limit, &le.buf)
	default:
		n, token = l.sh.Layout.RW(key, p.Mode == Write, &le.buf)
	}
	t.call = &le.buf.FirstCtx
	n.LabelArg = l.labelArg(p)
	n = n.WithFirstArgs(&le.buf, l.sh.MSArg(t.ttl), l.sh.MSArg(t.wait), l.sh.SIDArg, l.sh.WindowArg)
	le.t = t // for the Waiting hook
	h, err := l.be.Obtain(ctx, key, n, token, t.engineTerms(le))
	if err != nil {
		return nil, err
	}
	return l.newLease(ctx, le, key, n, token, h, t), nil
}

// bounds are the Redis call bounds the options set.
func (o *options) bounds() callctx.Bounds { return callctx.Bounds{Timeout: o.callTimeout} }

// waiting is the engine's Waiting hook: ref is the waiting Obtain's lease.
func (l *Locker) waiting(ref any) func() {
	le, _ := ref.(*Lease)
	if le == nil {
		return func() {}
	}
	return l.tel.waiting(le.t.params)
}
