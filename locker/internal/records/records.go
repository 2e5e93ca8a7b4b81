// Package records keeps idempotency records on one Redis node: the record
// layout, the begin/end/renew scripts' calls and replies, the operator's
// read of a record (Inspect), and the wait for an in-flight record.
// locker.Idempotent, locker.Claim and locker.InspectIdempotency are built
// on it; the record's lease is kept by package keeper like a lock's.
//
// A record named N lives in one string at prefix+"{N}:r": its state (in
// flight or done), a waiters flag, the SHA-256 of the request's
// fingerprint, and the owner token (in flight, expiring with a lease) or
// the stored outcome (done, expiring with the record TTL). Callers waiting
// for an in-flight record register their tokens in a set at
// prefix+"{N}:rw"; completing or abandoning the record publishes to each
// of them on prefix+"{N}:rc", through the node's one subscriber
// connection. All three share the hash tag {N}; the suffixes never collide
// with a lock's keys.
package records

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/backend"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/protocol"
)

// Statuses of idem_begin.lua's reply.
const (
	Claimed  = 1 // no record: now in flight, owned by the caller's token
	InFlight = 2 // another execution owns it; the reply carries its lease left
	Mismatch = 3 // the record holds another fingerprint
	Done     = 4 // completed: the reply carries the record, outcome last
)

// outcomeAt is where a done record's outcome starts: after the state, the
// waiters flag and the 64 hex digits of the fingerprint.
const outcomeAt = 2 + 64

// End modes of idem_end.lua.
const (
	Complete = "c" // store the outcome for the TTL
	Abandon  = "a" // delete the record, so a retry executes
)

// Store is the record store on one node.
type Store struct {
	nd *backend.Node
}

// New returns the store on nd.
func New(nd *backend.Node) *Store { return &Store{nd: nd} }

// Keys are the Redis keys and the channel of one record.
type Keys struct {
	keys    driver.Keys // record, waiters
	Channel string
}

// Keys returns the keys of the record named name.
func (s *Store) Keys(name string) Keys {
	base := s.nd.Sh.Cfg.Prefix + "{" + name + "}"
	return Keys{keys: driver.NewKeys(base+":r", base+":rw"), Channel: base + ":rc"}
}

// Fingerprint is the stored form of a request's fingerprint: its SHA-256
// in hex, whatever its length.
func Fingerprint(fingerprint string) string {
	sum := sha256.Sum256([]byte(fingerprint))
	return hex.EncodeToString(sum[:])
}

// Begun is idem_begin.lua's reply: a status, and the in-flight record's
// lease left (InFlight) or the stored outcome (Done).
type Begun struct {
	Status  int64
	PTTL    time.Duration
	Outcome []byte
}

// Begin runs idem_begin.lua once for token, asking for an in-flight lease
// of lease and, when wait > 0, registering token as a waiter. A call whose
// outcome is unknown is cleaned up (the script may have claimed).
func (s *Store) Begin(ctx context.Context, k Keys, fp, token string, lease, wait time.Duration) (Begun, error) {
	cctx, cancel := s.nd.Sh.Cfg.Bounds.Call(ctx)
	var args protocol.Args
	args[protocol.ArgFingerprint] = fp
	args[protocol.ArgToken] = token
	args[protocol.ArgLeaseMS] = protocol.MS(lease)
	args[protocol.ArgWaitMS] = protocol.MS(max(wait, 0))
	v, err := protocol.IdemBegin.Eval(cctx, s.nd.Drv, k.keys, &args)
	cancel()
	if err != nil {
		if !errors.Is(err, lockerr.ErrNotSent) {
			s.cleanup(k, token) // the script may have run and claimed
		}
		return Begun{}, Failed(ctx, err)
	}
	a, _ := v.([]any)
	var b Begun
	if len(a) > 0 {
		b.Status, _ = a[0].(int64)
	}
	switch {
	case b.Status == Claimed, b.Status == Mismatch:
		return b, nil
	case b.Status == InFlight && len(a) == 2:
		pttl, _ := a[1].(int64)
		b.PTTL = time.Duration(pttl) * time.Millisecond
		return b, nil
	case b.Status == Done && len(a) == 2:
		if rec, ok := a[1].(string); ok && len(rec) >= outcomeAt {
			b.Outcome = []byte(rec[outcomeAt:])
			return b, nil
		}
	}
	return Begun{}, fmt.Errorf("locker: unexpected idempotency script reply %v", v)
}

// End completes (Complete: stores outcome for ttl) or abandons the record
// token holds, with priority and on a context that ignores ctx's
// cancellation. ErrNotHeld: token no longer owns it.
func (s *Store) End(ctx context.Context, k Keys, token, mode string, outcome []byte, ttl time.Duration) error {
	cctx, cancel := s.nd.Sh.Cfg.Bounds.Upkeep(ctx)
	defer cancel()
	v, err := protocol.IdemEnd.Eval(cctx, s.nd.Drv, k.keys, endArgs(k, token, mode, outcome, protocol.MS(ttl)))
	if err != nil {
		return lockerr.Unavailable(err)
	}
	if n, _ := v.(int64); n != 1 {
		return lockerr.ErrNotHeld
	}
	return nil
}

// endArgs are idem_end.lua's arguments: token's record k ends by mode,
// storing outcome for ttl_ms.
func endArgs(k Keys, token, mode string, outcome, ttlMS any) *protocol.Args {
	var a protocol.Args
	a[protocol.ArgToken] = token
	a[protocol.ArgMode] = mode
	a[protocol.ArgOutcome] = outcome
	a[protocol.ArgTTLMS] = ttlMS
	a[protocol.ArgChannel] = k.Channel
	return &a
}

// Renew resets the in-flight lease of token's record to ttl; false:
// refused, token no longer owns it.
func (s *Store) Renew(ctx context.Context, k Keys, token string, ttl time.Duration) (bool, error) {
	var a protocol.Args
	a[protocol.ArgToken] = token
	a[protocol.ArgLeaseMS] = protocol.MS(ttl)
	v, err := protocol.IdemRenew.Eval(ctx, s.nd.Drv, k.keys.First(1), &a)
	if err != nil {
		return false, lockerr.Unavailable(err) // as a lock's renewal: the loss's log says so
	}
	n, _ := v.(int64)
	return n == 1, nil
}

// View is idem_inspect.lua's reply: a record read without claiming it
// (locker.IdempotencyState).
type View struct {
	InFlight    bool   // in flight; else done
	Fingerprint string // the stored fingerprint (Fingerprint's form)
	Owner       string // the in-flight owner's token; "" when done
	// PTTL is the key's time to live; 0 for a key without an expiry.
	PTTL    time.Duration
	Waiting int // tokens registered as waiting, while in flight
}

// Inspect reads record k and its waiters without claiming or changing
// anything; ok is false when there is no record. Its errors are the
// driver's (a record of another protocol among them) or a malformed
// reply's.
func (s *Store) Inspect(ctx context.Context, k Keys) (v View, ok bool, err error) {
	cctx, cancel := s.nd.Sh.Cfg.Bounds.Call(ctx)
	defer cancel()
	r, err := protocol.IdemInspect.Eval(cctx, s.nd.Drv, k.keys, &protocol.Args{})
	if err != nil || r == nil {
		return View{}, false, err
	}
	a, _ := r.([]any)
	if len(a) != 5 {
		return View{}, false, fmt.Errorf("locker: unexpected idempotency script reply %v", r)
	}
	state, _ := a[0].(string)
	fp, _ := a[1].(string)
	pttl, okP := a[2].(int64)
	waiting, okW := a[3].(int64)
	owner, _ := a[4].(string)
	if (state != "p" && state != "d") || len(fp) != 64 || !okP || !okW {
		return View{}, false, fmt.Errorf("locker: unexpected idempotency script reply %v", r)
	}
	return View{InFlight: state == "p", Fingerprint: fp, Owner: owner,
		PTTL: time.Duration(max(pttl, 0)) * time.Millisecond, Waiting: int(waiting)}, true, nil
}

// cleanup abandons a claim that a failed call may have made, now and once
// more a call timeout later (the lost call may still be on its way); off
// the caller's path, so that a Redis that does not answer refuses the
// request after one call timeout, not two.
func (s *Store) cleanup(k Keys, token string) {
	end := func() {
		ctx, cancel := s.nd.Sh.Cfg.Bounds.Cleanup(context.Background())
		defer cancel()
		_, _ = protocol.IdemEnd.Eval(ctx, s.nd.Drv, k.keys, endArgs(k, token, Abandon, "", int64(1)))
	}
	go end()
	time.AfterFunc(s.nd.Sh.Cfg.Bounds.Timeout, end)
}

// Failed turns a failed Redis call into the caller's error.
func Failed(ctx context.Context, err error) error {
	if ce := ctx.Err(); ce != nil {
		return fmt.Errorf("locker: idempotency check interrupted: %w", ce)
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return fmt.Errorf("locker: idempotency check interrupted: %w", context.DeadlineExceeded)
	}
	return lockerr.Unavailable(err)
}

// Record is the record's own key (for logs).
func (k Keys) Record() string { return k.keys.Names()[0] }

// Name is the record name for a client key used on route by scope
// (locker.IdempotencyName): a SHA-256 over the three, each length-prefixed
// but the last, so user input cannot forge separators or hash tags.
func Name(route, scope, key string) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, s := range [...]string{route, scope} {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	h.Write([]byte(key))
	return "idem:" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}
