package locker

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/locktag/locktag/locker/driver"
	"github.com/locktag/locktag/locker/internal/hub"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/names"
	"github.com/locktag/locktag/locker/internal/node"
	"github.com/locktag/locktag/locker/internal/scripts"
)

// Idempotency records.
//
// A record named N lives in one string at prefix+"{N}:r": its state (in
// flight or done), the SHA-256 of the request's fingerprint, and the owner
// token (in flight, expiring with a lease) or the stored outcome (done,
// expiring with the record TTL). Callers waiting for an in-flight record
// register their tokens in a set at prefix+"{N}:rw"; completing or
// abandoning the record publishes to each of them on prefix+"{N}:rc",
// through the Locker's one shared subscriber connection. All three share
// the hash tag {N}. The derived suffixes never collide with a lock's keys.

// Idempotency sentinel errors; see also ErrUnavailable and ErrNotHeld.
var (
	// ErrInFlight: another execution holds the idempotency key and did not
	// finish within IdemParams.Wait (joined with ctx.Err() when the caller's
	// context ended first).
	ErrInFlight = errors.New("locker: idempotency key in flight")
	// ErrMismatch: the idempotency key was first used with a different
	// fingerprint (another request body, path or method).
	ErrMismatch = errors.New("locker: idempotency key reused with a different request")
	// ErrBadIdempotencyKey: a client's idempotency key is empty, too long or
	// not printable ASCII (see ParseIdempotencyKey).
	ErrBadIdempotencyKey = errors.New("locker: malformed idempotency key")
)

// DefaultIdemTTL is how long a completed idempotency record is kept when
// IdemParams.TTL is zero: 24 hours.
const DefaultIdemTTL = 24 * time.Hour

// DefaultMaxIdempotencyKeyLen is the longest client key ParseIdempotencyKey
// accepts when given no cap: 255 bytes.
const DefaultMaxIdempotencyKeyLen = 255

// IdemParams are the terms of one Idempotent call. The zero value keeps
// completed records for DefaultIdemTTL, uses the Locker's watchdog lease
// for the in-flight marker and does not wait.
type IdemParams struct {
	// TTL is how long a completed record is kept and replayed. After it, the
	// key is free and a request with it executes again. Zero means
	// DefaultIdemTTL (24h).
	TTL time.Duration
	// Lease is the in-flight marker's lease. It is renewed every Lease/3
	// while the Claim is held, so it only runs out when the process holding
	// it dies or cannot reach Redis for a whole lease; then another request
	// with the key may execute. Zero selects the Locker's watchdog settings
	// (WithWatchdog; default a 30s lease renewed every 10s).
	Lease time.Duration
	// Wait is how long to wait for an in-flight execution of the same key
	// to end; it then replays that outcome (or, if that execution was
	// abandoned, claims the key). Zero fails at once with ErrInFlight. The
	// wait never outlasts ctx and uses no polling: the ending execution
	// notifies the waiters.
	Wait time.Duration
	// Name is the low-cardinality name spans and metrics carry (attribute
	// locktag.lock.name): the route or full method for the adapters. It
	// defaults to "idempotency".
	Name string
}

// idemKeys are the Redis keys and the channel of one record.
type idemKeys struct {
	keys    driver.Keys // record, waiters
	channel string
}

func (l *Locker) idemKeys(name string) idemKeys {
	base := l.o.prefix + "{" + name + "}"
	return idemKeys{keys: driver.NewKeys(base+":r", base+":rw"), channel: base + ":rc"}
}

// IdempotencyName returns the record name for a client key used on route
// (e.g. "POST /payments" or a gRPC full method) by the caller scope: a
// SHA-256 over the three, so user input cannot forge separators or hash
// tags, and the name is short whatever the key's length.
func IdempotencyName(route, scope, key string) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, s := range [...]string{route, scope} {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	h.Write([]byte(key))
	return "idem:" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// Idempotent claims the idempotency record named name (see
// IdempotencyName) for a request whose content is summed up by fingerprint
// (any string; it is stored as its SHA-256).
//
//   - No record: the caller gets a held Claim and must execute, then call
//     Complete with the outcome to store, or Abandon (also on panic) so a
//     retry can execute.
//   - Completed with the same fingerprint: a Claim whose Replay returns the
//     stored outcome. The caller must not execute.
//   - Another fingerprint, in flight or done: ErrMismatch.
//   - In flight: ErrInFlight, or with p.Wait, wait for the execution to end
//     and then replay it (or claim, if it was abandoned or its lease ran out).
//
// A Redis failure returns an error matching ErrUnavailable: the caller must
// not execute. Exactly one Claim per record is held at a time; the marker
// is only given to another caller when it is abandoned or its lease runs
// out unrenewed, and the former owner's Complete then fails with ErrNotHeld
// and stores nothing.
//
// A Locker that cannot keep records safely (a Redlock Locker) returns an
// error matching ErrIdempotencyUnsupported and touches no Redis node; see
// SupportsIdempotency.
func (l *Locker) Idempotent(ctx context.Context, name, fingerprint string, p IdemParams) (*Claim, error) {
	span := l.tel.startIdem(ctx, p.Name)
	c, err := l.idempotent(ctx, name, fingerprint, p)
	l.tel.endIdem(span, p.Name, c, err)
	return c, err
}

// SupportsIdempotency returns nil when Idempotent can keep records on l's
// backend, and otherwise an error matching ErrIdempotencyUnsupported that
// says why. A Redlock Locker (NewRedlock) does not support idempotency: a
// record kept on one master is lost or split by that master's failover, so
// a key could execute twice, and a record kept by quorum is not
// implemented. Guards and adapters call it when they are built, so a
// service refuses to start instead of failing every request.
func (l *Locker) SupportsIdempotency() error {
	_, err := l.be.Records()
	return err
}

func (l *Locker) idempotent(ctx context.Context, name, fingerprint string, p IdemParams) (*Claim, error) {
	nd, err := l.be.Records()
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, ErrEmptyKey
	}
	if err := ctx.Err(); err != nil {
		return nil, idemFailed(ctx, err)
	}
	k := l.idemKeys(name)
	sum := sha256.Sum256([]byte(fingerprint))
	fp := hex.EncodeToString(sum[:])
	token := names.NewToken()
	var w *hub.Waiter
	if p.Wait > 0 {
		// Registered before the first try so a wake-up published right
		// after it is not dropped.
		w = nd.Hub.Register(token)
		defer nd.Hub.Unregister(w)
	}
	sent := time.Now()
	c, pttl, err := l.idemTry(ctx, nd, k, fp, token, p, p.Wait, sent)
	if err != nil || c != nil {
		return c, err
	}
	if p.Wait <= 0 {
		return nil, ErrInFlight
	}
	return l.idemWait(ctx, nd, k, fp, token, p, w, sent, pttl)
}

// idemTry runs idem_begin.lua once. It returns a Claim (held or replay), an
// error, or neither with the in-flight record's remaining lease.
func (l *Locker) idemTry(ctx context.Context, nd *node.Node, k idemKeys, fp, token string, p IdemParams, wait time.Duration, sent time.Time) (*Claim, time.Duration, error) {
	lease, every := p.Lease, p.Lease/3
	if lease <= 0 {
		lease, every = l.o.lease, l.o.renewEvery
	}
	cctx, cancel := l.o.bounds().Call(ctx)
	v, err := nd.Drv.Eval(cctx, scripts.IdemBegin, k.keys, fp, token, scripts.MS(lease), scripts.MS(max(wait, 0)))
	cancel()
	if err != nil {
		if !errors.Is(err, ErrNotSent) {
			l.idemCleanup(nd, k, token) // the script may have run and claimed
		}
		return nil, 0, idemFailed(ctx, err)
	}
	a, _ := v.([]any)
	status := int64(0)
	if len(a) > 0 {
		status, _ = a[0].(int64)
	}
	switch {
	case status == 1:
		ttl := p.TTL
		if ttl <= 0 {
			ttl = DefaultIdemTTL
		}
		return l.newClaim(ctx, nd, k, idemName(p.Name), token, ttl, lease, every, sent), 0, nil
	case status == 2 && len(a) == 2:
		pttl, _ := a[1].(int64)
		return nil, time.Duration(pttl) * time.Millisecond, nil
	case status == 3:
		return nil, 0, ErrMismatch
	case status == 4 && len(a) == 2:
		if rec, ok := a[1].(string); ok && len(rec) >= 66 {
			return &Claim{replay: true, outcome: []byte(rec[66:]), ctx: ctx}, 0, nil
		}
	}
	return nil, 0, fmt.Errorf("locker: unexpected idempotency script reply %v", v)
}

// idemWait waits for the in-flight record to end after a first try sent at
// sent, woken by the end script's notice, and re-checks then. A notice lost
// with the subscriber connection costs at most the record's remaining lease.
func (l *Locker) idemWait(ctx context.Context, nd *node.Node, k idemKeys, fp, token string, p IdemParams, w *hub.Waiter, sent time.Time, pttl time.Duration) (*Claim, error) {
	waitUntil := sent.Add(p.Wait)
	wt := nd.Hub.Watch(k.channel, w)
	defer wt.Close()
	deadline := time.NewTimer(time.Until(waitUntil))
	defer deadline.Stop()
	recheck, observed := false, false
	for {
		missed, err := wt.Ensure(ctx, sent)
		if err != nil {
			return nil, errors.Join(ErrInFlight, err)
		}
		recheck = recheck || missed
		if recheck {
			recheck = false
			sent = time.Now()
			c, left, err := l.idemTry(ctx, nd, k, fp, token, p, time.Until(waitUntil), sent)
			if err != nil || c != nil {
				return c, err
			}
			pttl, observed = left, false
		}
		if !observed {
			observed = true
			wt.Observe(pttl, 0)
		}
		select {
		case <-w.Grant:
			recheck = true
		case <-w.Kick:
			wt.Broken()
			recheck = true
		case <-w.Check:
			recheck = true
		case <-wt.Polled():
			recheck = true
		case <-deadline.C:
			return nil, ErrInFlight
		case <-ctx.Done():
			return nil, errors.Join(ErrInFlight, ctx.Err())
		}
	}
}

// idemFailed turns a failed Redis call into the caller's error.
func idemFailed(ctx context.Context, err error) error {
	if ce := ctx.Err(); ce != nil {
		return fmt.Errorf("locker: idempotency check interrupted: %w", ce)
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return fmt.Errorf("locker: idempotency check interrupted: %w", context.DeadlineExceeded)
	}
	return lockerr.Unavailable(err)
}

// idemCleanup abandons a claim that a failed call may have made, now and
// once more a call timeout later (the lost call may still be on its way);
// off the caller's path, as single.abandon does, so that a Redis that does
// not answer refuses the request after one call timeout, not two.
func (l *Locker) idemCleanup(nd *node.Node, k idemKeys, token string) {
	end := func() {
		ctx, cancel := l.o.bounds().Cleanup(context.Background())
		defer cancel()
		_, _ = nd.Drv.Eval(ctx, scripts.IdemEnd, k.keys, token, "a", "", 1, k.channel)
	}
	go end()
	time.AfterFunc(l.o.callTimeout, end)
}

// ParseIdempotencyKey returns the key a client sent in an Idempotency-Key
// header field (or idempotency-key gRPC metadata). Per the IETF httpapi
// draft the field is a Structured Field string, "...", in which \" and \\
// stand for " and \; the bare text is accepted too. The key must be 1 to
// maxLen bytes (maxLen < 1 means DefaultMaxIdempotencyKeyLen) of printable
// ASCII: space to '~' inside quotes, '!' to '~' without '"' and '\' bare.
// Errors wrap ErrBadIdempotencyKey and say what is wrong, never the value.
func ParseIdempotencyKey(v string, maxLen int) (string, error) {
	if maxLen < 1 {
		maxLen = DefaultMaxIdempotencyKeyLen
	}
	if len(v) >= 2 && v[0] == '"' {
		if v[len(v)-1] != '"' {
			return "", fmt.Errorf("%w: unterminated quoted string", ErrBadIdempotencyKey)
		}
		b := make([]byte, 0, len(v)-2)
		for i := 1; i < len(v)-1; i++ {
			ch := v[i]
			switch {
			case ch == '\\':
				i++
				if i == len(v)-1 || (v[i] != '"' && v[i] != '\\') {
					return "", fmt.Errorf("%w: bad escape in quoted string", ErrBadIdempotencyKey)
				}
				ch = v[i]
			case ch == '"':
				return "", fmt.Errorf("%w: unescaped quote in quoted string", ErrBadIdempotencyKey)
			case ch < 0x20 || ch > 0x7e:
				return "", fmt.Errorf("%w: not printable ASCII", ErrBadIdempotencyKey)
			}
			b = append(b, ch)
		}
		v = string(b)
	} else {
		for i := 0; i < len(v); i++ {
			if ch := v[i]; ch <= 0x20 || ch > 0x7e || ch == '"' || ch == '\\' {
				return "", fmt.Errorf("%w: not a quoted string or printable ASCII without spaces", ErrBadIdempotencyKey)
			}
		}
	}
	switch {
	case v == "":
		return "", fmt.Errorf("%w: empty", ErrBadIdempotencyKey)
	case len(v) > maxLen:
		return "", fmt.Errorf("%w: longer than %d bytes", ErrBadIdempotencyKey, maxLen)
	}
	return v, nil
}
