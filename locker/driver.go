package locker

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Script is a Lua script the locker runs on Redis. Drivers run it by SHA1
// (EVALSHA) and fall back to EVAL when the server answers NOSCRIPT, so a
// SCRIPT FLUSH or a restarted server costs one extra round trip, never an error.
type Script struct {
	src  string
	hash string
	// hash and src as interface values, made once: boxing a string into
	// an argument list allocates on every call otherwise.
	hashArg, srcArg any
}

func newScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	h := hex.EncodeToString(sum[:])
	return &Script{src: src, hash: h, hashArg: h, srcArg: src}
}

// Source is the script's Lua text.
func (s *Script) Source() string { return s.src }

// Hash is the hex SHA1 of the source, as EVALSHA wants it.
func (s *Script) Hash() string { return s.hash }

// Driver is the seam between the lock logic and a Redis client. The locker
// needs only two things from Redis: run a script on some keys, and listen on
// channels. The default driver is redigo ([New]); adapters for other clients
// (Redis Cluster, Sentinel) implement Driver and are passed to [NewWithDriver].
//
// All keys of one call share a Redis Cluster hash slot.
type Driver interface {
	// Eval runs s with keys and args and returns the reply with integers as
	// int64, bulk strings as string, arrays as []any and nil for a nil reply.
	// It uses EVALSHA and falls back to EVAL on NOSCRIPT. A Redis error reply
	// is returned as an error. Eval honours ctx's deadline and cancellation.
	Eval(ctx context.Context, s *Script, keys []string, args ...any) (any, error)

	// Listen opens one dedicated subscriber connection. Every message that
	// arrives on a channel subscribed through it is passed to deliver, from a
	// single goroutine, in order. When the connection fails, broken is called
	// once with the error and the Listener is dead; the locker opens a new one.
	Listen(ctx context.Context, deliver func(channel, payload string), broken func(error)) (Listener, error)
}

// Listener is one subscriber connection opened by [Driver.Listen].
type Listener interface {
	// Subscribe subscribes to channel and returns once the server has
	// confirmed it, so every message published after Subscribe returns is
	// delivered.
	Subscribe(ctx context.Context, channel string) error
	// Unsubscribe unsubscribes from channel without waiting for the answer.
	Unsubscribe(channel string) error
	// Close closes the connection; broken is not called for it.
	Close() error
}

// ErrNotSent marks a Driver error for a call that never reached Redis: no
// connection could be had (a failed dial, an exhausted pool, no free call
// slot), or the context ended before anything was written. The locker then
// knows the call changed nothing and sends no clean-up for it. Drivers wrap
// such errors with it (fmt.Errorf("%w: %w", locker.ErrNotSent, err)); errors
// that match it also match ErrUnavailable once the locker returns them.
var ErrNotSent = errors.New("locker: call not sent")

// notSent marks err as the failure of a call that was never sent.
func notSent(err error) error {
	if errors.Is(err, ErrNotSent) {
		return err
	}
	return &multiError{msg: ErrNotSent.Error() + ": " + err.Error(), errs: []error{ErrNotSent, err}}
}

// bound wraps d so at most n calls are in flight at once (n <= 0: d as it
// is). Priority calls (renewals, releases) bypass the bound: a held lock's
// upkeep must not queue behind a burst of waiters.
func bound(d Driver, n int) Driver {
	if n <= 0 {
		return d
	}
	return &boundedDriver{Driver: d, slots: make(chan struct{}, n)}
}

type boundedDriver struct {
	Driver
	slots chan struct{}
}

func (b *boundedDriver) Eval(ctx context.Context, s *Script, keys []string, args ...any) (any, error) {
	if IsPriority(ctx) {
		return b.Driver.Eval(ctx, s, keys, args...)
	}
	select {
	case b.slots <- struct{}{}:
	default:
		// Full: wait, but never past ctx's deadline (callCtx gives every
		// call one) or cancellation.
		var expired <-chan time.Time
		if dl, ok := ctx.Deadline(); ok {
			t := time.NewTimer(time.Until(dl))
			defer t.Stop()
			expired = t.C
		}
		select {
		case b.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, notSent(fmt.Errorf("waiting for a call slot: %w", ctx.Err()))
		case <-expired:
			return nil, notSent(fmt.Errorf("waiting for a call slot: %w", context.DeadlineExceeded))
		}
	}
	defer func() { <-b.slots }()
	return b.Driver.Eval(ctx, s, keys, args...)
}

// closeReserved forwards Locker.Close to the wrapped driver.
func (b *boundedDriver) closeReserved() {
	if r, ok := b.Driver.(interface{ closeReserved() }); ok {
		r.closeReserved()
	}
}
