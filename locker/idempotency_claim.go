package locker

import (
	"context"
	"sync"
	"time"
)

// Claim is what Idempotent returns: either a stored outcome to replay
// (Replay reports true; nothing is held) or the right to execute, which
// must end with Complete or Abandon. While it is held, the in-flight
// marker's lease is renewed in the background.
//
// A Claim is safe for concurrent use.
type Claim struct {
	l       *Locker
	k       idemKeys
	token   string
	ttl     time.Duration
	outcome []byte
	replay  bool
	ctx     context.Context
	cancel  context.CancelCauseFunc

	mu       sync.Mutex
	ended    bool // Complete or Abandon called
	lost     bool
	lease    time.Duration
	every    time.Duration
	deadline time.Time // local, conservative end of the lease
	expiry   *time.Timer
	renewal  *time.Timer
}

func (l *Locker) newClaim(ctx context.Context, k idemKeys, token string, ttl, lease, every time.Duration, sent time.Time) *Claim {
	c := &Claim{l: l, k: k, token: token, ttl: ttl, lease: lease, every: every, deadline: sent.Add(lease)}
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	c.mu.Lock()
	c.expiry = time.AfterFunc(time.Until(c.deadline), c.lose)
	c.renewal = time.AfterFunc(every, c.renew)
	c.mu.Unlock()
	return c
}

// Replay returns the outcome stored by an earlier execution and true if
// this Claim is a replay; the caller must then not execute. For a held
// Claim it returns nil and false.
func (c *Claim) Replay() ([]byte, bool) { return c.outcome, c.replay }

// Context returns the context to execute with: for a held Claim it is
// cancelled with cause ErrLockLost if the in-flight marker is lost (its
// renewal was refused, or not confirmed before the lease ran out), and with
// cause ErrNotHeld after Complete or Abandon. For a replay it is the
// context given to Idempotent.
func (c *Claim) Context() context.Context { return c.ctx }

// Lost reports whether the in-flight marker was lost before the Claim
// ended. Another caller may then have claimed the key.
func (c *Claim) Lost() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lost
}

// Complete stores outcome as the record's result for the TTL and wakes
// waiting callers, who replay it. It ignores ctx's cancellation (the request
// may be over) and is bounded by the call timeout. It returns ErrNotHeld,
// storing nothing, if the Claim is a replay, already ended, or no longer
// owns the record (its lease ran out and it expired or was claimed again);
// an error matching ErrUnavailable if Redis failed — the record then stays
// in flight until its lease runs out, and a retry after that executes again.
func (c *Claim) Complete(ctx context.Context, outcome []byte) error {
	return c.end(ctx, "c", outcome)
}

// Abandon deletes the in-flight record so that a retry executes, and wakes
// waiting callers (one of them claims it). Call it when the execution did
// not happen or failed in a way that must not be replayed, and on panic;
// after Complete it is a no-op returning ErrNotHeld, so it can be deferred.
func (c *Claim) Abandon(ctx context.Context) error {
	return c.end(ctx, "a", nil)
}

func (c *Claim) end(ctx context.Context, mode string, outcome []byte) error {
	if c.replay {
		return ErrNotHeld
	}
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return ErrNotHeld
	}
	c.ended = true
	c.expiry.Stop()
	c.renewal.Stop()
	c.mu.Unlock()
	defer c.cancel(ErrNotHeld)

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.l.o.callTimeout)
	defer cancel()
	v, err := c.l.drv.Eval(cctx, scriptIdemEnd, c.k.keys, c.token, mode, outcome, ms(c.ttl), c.k.channel)
	if err != nil {
		return unavailable(err)
	}
	if n, _ := v.(int64); n != 1 {
		return ErrNotHeld
	}
	return nil
}

// lose marks the marker lost and cancels the Claim's context.
func (c *Claim) lose() {
	c.mu.Lock()
	if c.ended || c.lost {
		c.mu.Unlock()
		return
	}
	c.lost = true
	c.renewal.Stop()
	// Cancelled before Lost can report true, so a caller that saw Lost
	// finds the context's cause set.
	c.cancel(ErrLockLost)
	c.mu.Unlock()
}

// renew runs on the renewal timer. A refusal loses the marker at once; a
// failed call is retried until the local deadline, whose timer then loses
// it. Like a lock's watchdog, it never re-claims.
func (c *Claim) renew() {
	c.mu.Lock()
	if c.ended || c.lost {
		c.mu.Unlock()
		return
	}
	deadline := c.deadline
	c.mu.Unlock()

	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	sent := time.Now()
	v, err := c.l.drv.Eval(ctx, scriptIdemRenew, c.k.keys[:1], c.token, ms(c.lease))
	cancel()
	if n, _ := v.(int64); err == nil && n != 1 {
		c.lose()
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended || c.lost {
		return
	}
	if err != nil {
		c.renewal.Reset(max(min(c.every/4, time.Second), 10*time.Millisecond))
		return
	}
	c.deadline = sent.Add(c.lease)
	c.expiry.Reset(time.Until(c.deadline))
	c.renewal.Reset(c.every)
}
