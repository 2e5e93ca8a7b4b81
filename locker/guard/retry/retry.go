package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// The errors of a retried operation. Each adapter's client helper
// re-exports them, so errors.Is matches them whichever transport failed.
var (
	// ErrBudgetExhausted: the operation was given up, its attempts
	// (WithMaxAttempts) or its time (WithBudget, the caller's deadline)
	// used up. The error also wraps the last attempt's error, if any.
	ErrBudgetExhausted = errors.New("retry: budget exhausted")
	// ErrKeyReused: the server already saw the idempotency key with a
	// different request (HTTP 422 idempotency-key-reused, FAILED_PRECONDITION
	// with reason IDEMPOTENCY_KEY_REUSED). A new operation needs a new key.
	ErrKeyReused = errors.New("retry: idempotency key reused with a different request")
	// ErrBodyNotRewindable: the attempt needed a retry but its request body
	// cannot be sent again (an HTTP request without GetBody).
	ErrBodyNotRewindable = errors.New("retry: request body cannot be sent again")
)

// Class is what one attempt's outcome means for a retry.
type Class int

// The classes; the package documentation says which are retried.
const (
	// Done: an answer to return as it is — a success, or a failure that
	// retrying cannot fix.
	Done Class = iota
	// NoAnswer: the attempt got no answer (a transport error); the server
	// may or may not have run it.
	NoAnswer
	// InFlight: the key's first request is still running (409
	// idempotency-key-in-flight; ABORTED).
	InFlight
	// Busy: the server's lock is held by another operation (409 lock-busy;
	// ABORTED with reason LOCK_BUSY).
	Busy
	// Throttled: over a rate or concurrency limit (429;
	// RESOURCE_EXHAUSTED with a RetryInfo).
	Throttled
	// Unavailable: the server, or its lock store, is unavailable for now
	// (503; UNAVAILABLE).
	Unavailable
	// KeyReused: the key was used with a different request (422
	// idempotency-key-reused; FAILED_PRECONDITION with reason
	// IDEMPOTENCY_KEY_REUSED).
	KeyReused
)

var classNames = [...]string{"done", "no answer", "in flight", "busy", "throttled", "unavailable", "key reused"}

// String names the class.
func (c Class) String() string {
	if c >= 0 && int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Event describes one retry, for WithOnRetry.
type Event struct {
	// Attempt is the number of the attempt that just ended, from 1.
	Attempt int
	// Class is what its outcome was.
	Class Class
	// Hint is the delay the server asked for; 0 if none.
	Hint time.Duration
	// Delay is how long the client waits before the next attempt.
	Delay time.Duration
	// Err is the attempt's error or a description of its answer.
	Err error
}

// Policy is a retry policy: which outcomes are retried, how long to wait
// and when to give up. It is immutable and safe for concurrent use. The
// zero value, and a nil *Policy, have New()'s defaults.
type Policy struct{ s settings }

// settings returns p's settings, or the defaults for a zero or nil p (New
// always sets newKey).
func (p *Policy) settings() *settings {
	if p == nil || p.s.newKey == nil {
		return &defaults
	}
	return &p.s
}

// New returns a Policy with opts applied over the defaults.
func New(opts ...Option) *Policy {
	p := &Policy{s: defaults}
	for _, o := range opts {
		if o != nil {
			o(&p.s)
		}
	}
	return p
}

// Retries reports whether outcomes of class c are tried again.
func (p *Policy) Retries(c Class) bool {
	switch c {
	case NoAnswer, InFlight, Throttled, Unavailable:
		return true
	case Busy:
		return p.settings().retryBusy
	}
	return false
}

// NewKey returns a key for a new operation from the policy's WithNewKey
// function.
func (p *Policy) NewKey() string { return p.settings().newKey() }

// Begin starts one operation's attempts; call it just before the first
// attempt.
func (p *Policy) Begin() *Attempts {
	return &Attempts{s: p.settings(), start: time.Now(), n: 1}
}

// Attempts counts one operation's attempts and waits between them. It is
// used by one goroutine at a time.
type Attempts struct {
	s     *settings
	start time.Time
	n     int // the attempt under way or just ended, from 1
}

// N returns the number of the attempt under way (or just ended), from 1.
func (a *Attempts) N() int { return a.n }

// Wait is called after an attempt whose outcome has class c (one Retries
// accepts), hint the server's delay (0 if none) and cause the attempt's
// error or a description of its answer. It waits for the next attempt and
// returns nil — or returns at once an error wrapping ErrBudgetExhausted
// and cause, when the attempts are used up or the next one would start
// after the budget or ctx's deadline; or, if ctx ends while it waits, an
// error wrapping ctx.Err() and cause.
func (a *Attempts) Wait(ctx context.Context, c Class, hint time.Duration, cause error) error {
	s := a.s
	if a.n >= s.maxAttempts {
		return gaveUp(fmt.Errorf("%w: %d attempts made", ErrBudgetExhausted, a.n), cause)
	}
	d := a.delay(hint)
	at := time.Now().Add(d)
	if end := a.start.Add(s.budget); at.After(end) {
		return gaveUp(fmt.Errorf("%w: the next attempt, in %v, would start after the %v budget", ErrBudgetExhausted, d.Round(time.Millisecond), s.budget), cause)
	}
	if end, ok := ctx.Deadline(); ok && at.After(end) {
		return gaveUp(fmt.Errorf("%w: the next attempt, in %v, would start after the context's deadline", ErrBudgetExhausted, d.Round(time.Millisecond)), cause)
	}
	if s.onRetry != nil {
		s.onRetry(Event{Attempt: a.n, Class: c, Hint: hint, Delay: d, Err: cause})
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return gaveUp(fmt.Errorf("retry: stopped waiting after attempt %d: %w", a.n, ctx.Err()), cause)
	case <-t.C:
	}
	a.n++
	return nil
}

// delay is the wait before the next attempt: the jittered backoff, or the
// server's hint (capped) if that is longer.
func (a *Attempts) delay(hint time.Duration) time.Duration {
	s := a.s
	b := s.maxWait
	if shift := a.n - 1; shift < 32 && s.base<<shift < s.maxWait && s.base<<shift > 0 {
		b = s.base << shift
	}
	d := b/2 + rand.N(b/2+1)
	if h := min(hint, s.maxHint); h > d {
		d = h
	}
	return d
}

// gaveUp is err followed by the last attempt's cause.
func gaveUp(err, cause error) error {
	if cause == nil {
		return err
	}
	return fmt.Errorf("%w; last attempt: %w", err, cause)
}
