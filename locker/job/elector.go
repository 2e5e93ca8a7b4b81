package job

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktag/locktag/locker"
)

// campaignWait is how long one campaign call waits in the lock's queue
// before it queues again. Long, so a candidate keeps its place in the
// first-come-first-served queue; a candidate that has gone is skipped
// after one grant window (locker.WithGrantWindow) whatever its wait.
const campaignWait = time.Hour

// Elector is one process's candidacy for leadership of name: while it
// leads it holds the lock name on its Locker, renewed by the watchdog, and
// every other candidate waits in the lock's first-come-first-served queue.
// The leader's context is cancelled the moment leadership is lost, and
// each term carries a fencing token larger than every earlier term's.
//
// How fast a crashed leader is replaced is set by the Locker's watchdog
// (locker.WithWatchdog): the next candidate leads at most one lease after
// the leader's last renewal. An Elector is safe for concurrent use; it runs
// one candidacy at a time (Run or Campaign).
type Elector struct {
	lk     *locker.Locker
	name   string
	params locker.Params
	o      electorOptions

	busy    atomic.Bool // a Run, or a Campaign and its term, is in progress
	mu      sync.Mutex
	cur     *term         // the current term; nil when not leading
	last    *term         // the latest term, live or ended; nil before the first
	changed chan struct{} // closed at the next change (Changed); nil until asked for
}

// NewElector returns a candidate for leadership of name on lk. Every
// candidate must use the same name, which is a lock's key in lk. It
// returns an error wrapping locker.ErrBadOption, naming each mistake, when lk is
// nil, name is empty or an option is invalid. NewElector does not
// campaign: call Run or Campaign.
func NewElector(lk *locker.Locker, name string, opts ...ElectorOption) (*Elector, error) {
	o, errs := evaluateElectorOptions(opts)
	if lk == nil {
		errs = append(errs, fmt.Errorf("%w: job: nil Locker", locker.ErrBadOption))
	}
	if name == "" {
		errs = append(errs, fmt.Errorf("%w: job: empty elector name", locker.ErrBadOption))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Elector{lk: lk, name: name, o: o, params: locker.Params{
		Wait:  campaignWait,
		Name:  name,
		Label: "leader " + name,
	}}, nil
}

// Name is the name led, the lock's key.
func (e *Elector) Name() string { return e.name }

// IsLeader reports whether this process leads now: it has a term whose
// context is live. A term whose lease ran out without a confirmed renewal
// is over at once, also in a process that resumes after a pause past its
// lease and has not run its timers yet. Nothing closes the gap between
// this check and the work after it: fence writes with Term.Token where
// that matters.
func (e *Elector) IsLeader() bool {
	_, ok := e.Term()
	return ok
}

// Term returns the current term and true while this process leads.
func (e *Elector) Term() (Term, bool) {
	e.mu.Lock()
	t := e.cur
	e.mu.Unlock()
	if t == nil || t.ctx.Err() != nil {
		return Term{}, false
	}
	return Term{t}, true
}

// Changed returns a channel that is closed at the next change of this
// process's leadership: when it is elected, and when its term ends (lost,
// resigned, or its campaign's context ended), the moment the term's
// context is cancelled. A term lost in a pause past its lease is reported
// at the first IsLeader or Term after the process resumes, or when its
// timers run, whichever is first. To miss no change, take the channel
// first, then read IsLeader or Term, then wait; the channel may be closed
// without a change a reader can see, so read again then. See
// docs/jobs.md#following-leadership.
func (e *Elector) Changed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.changed == nil {
		e.changed = make(chan struct{})
	}
	return e.changed
}

// notify closes the channel Changed handed out, if any.
func (e *Elector) notify() {
	e.mu.Lock()
	if e.changed != nil {
		close(e.changed)
		e.changed = nil
	}
	e.mu.Unlock()
}

// Run campaigns for leadership until ctx ends. Each time this process is
// elected it calls lead with the term's context, cancelled when leadership
// is lost (cause locker.ErrLockLost), on resigning (ErrResigned) or when ctx
// ends; lead should return then, and the lock goes to the next candidate
// while this process queues again. A nil lead leads until the term ends.
// Run returns ctx.Err() when ctx ends; locker.ErrClosed when the Locker
// shuts down; lead's error when lead fails while its term is live (after
// resigning); ErrCampaigning when the Elector is already campaigning. An
// error lead returns after its term ended does not end Run, and a failed
// campaign call is retried after WithRetryDelay. See docs/jobs.md#leaders.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context, t Term) error) error {
	if !e.busy.CompareAndSwap(false, true) {
		return ErrCampaigning
	}
	defer e.busy.Store(false)
	for {
		t, err := e.campaign(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		live, err := e.serve(ctx, t, lead)
		if err != nil && live {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// serve runs lead for term t, then ends t. live reports whether t was still
// live when lead returned.
func (e *Elector) serve(ctx context.Context, t *term, lead func(context.Context, Term) error) (live bool, err error) {
	defer func() {
		live = t.ctx.Err() == nil
		// A panic in lead still hands leadership on.
		_ = t.end(context.WithoutCancel(ctx))
	}()
	if lead == nil {
		<-t.ctx.Done()
		return false, nil
	}
	return false, lead(t.ctx, Term{t})
}

// Campaign waits until this process is elected and returns its term, for
// callers that manage the term themselves; Run is the usual way. ctx bounds
// the wait and the term: the term's context ends with it. End every term
// with Term.Resign, also a lost one: until then the Elector refuses another
// Campaign with ErrCampaigning. Campaign returns an error matching
// locker.ErrNotObtained and ctx.Err() when ctx ends first.
func (e *Elector) Campaign(ctx context.Context) (Term, error) {
	if !e.busy.CompareAndSwap(false, true) {
		return Term{}, ErrCampaigning
	}
	t, err := e.campaign(ctx)
	if err != nil {
		e.busy.Store(false)
		return Term{}, err
	}
	t.frees = true
	return Term{t}, nil
}

// campaign queues for the lock until it is granted or ctx ends.
func (e *Elector) campaign(ctx context.Context) (*term, error) {
	for {
		le, err := e.lk.Obtain(ctx, e.name, e.params)
		if err == nil {
			return e.begin(le), nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		if errors.Is(err, locker.ErrNotObtained) {
			continue // the wait ran out, or a grant came too late: queue again
		}
		if !errors.Is(err, locker.ErrUnavailable) && !errors.Is(err, locker.ErrProtocol) {
			return nil, err
		}
		pause := time.NewTimer(e.o.retry)
		select {
		case <-ctx.Done():
			pause.Stop()
			return nil, errors.Join(locker.ErrNotObtained, ctx.Err())
		case <-pause.C:
		}
	}
}

// begin makes the term of lease le the current one.
func (e *Elector) begin(le *locker.Lease) *term {
	ctx, cancel := context.WithCancelCause(le.Context())
	t := &term{e: e, lease: le, ctx: &termContext{ctx, le}, cancel: cancel, since: time.Now()}
	e.mu.Lock()
	e.cur, e.last = t, t
	e.mu.Unlock()
	e.notify()
	// However the term ends, its context is cancelled: that is the loss's
	// signal to Changed's readers, as prompt as the term context's own.
	context.AfterFunc(ctx, e.notify)
	return t
}

// Resign ends the current term, if any: its context is cancelled with
// cause ErrResigned and the lock goes to the next candidate. Under Run the
// hand-over waits for lead to return, and Run then queues again behind the
// others; a term from Campaign is released at once (Term.Resign).
func (e *Elector) Resign(ctx context.Context) error {
	e.mu.Lock()
	t := e.cur
	e.mu.Unlock()
	if t == nil {
		return nil
	}
	if t.frees {
		return t.end(ctx)
	}
	t.cancel(ErrResigned)
	return nil
}

// Term is one period of leadership. The zero Term is no term: its Token is
// 0 and its Context is nil.
type Term struct{ t *term }

type term struct {
	e      *Elector
	lease  *locker.Lease
	ctx    context.Context
	cancel context.CancelCauseFunc
	since  time.Time
	frees  bool // from Campaign: ending it frees the Elector

	once sync.Once
	err  error // end's result
}

// Token is the term's fencing token: larger than every earlier term's, so
// storage that remembers the largest token it saw refuses a deposed
// leader's writes (locker.Fence, locker.Fenced).
func (t Term) Token() int64 {
	if t.t == nil {
		return 0
	}
	return t.t.lease.Token()
}

// Context is the term's context, cancelled when leadership is lost (cause
// locker.ErrLockLost), on resignation (ErrResigned) or when the
// campaign's context ends. It carries the lease (locker.FromContext).
func (t Term) Context() context.Context {
	if t.t == nil {
		return nil
	}
	return t.t.ctx
}

// Since is when the term began (this process's clock).
func (t Term) Since() time.Time {
	if t.t == nil {
		return time.Time{}
	}
	return t.t.since
}

// Resign ends the term: its context is cancelled with cause ErrResigned
// and the lock goes to the next candidate in the queue. It returns an
// error matching locker.ErrNotHeld when leadership was already lost, and
// the first call's result on later calls. Resign ignores ctx's
// cancellation and is bounded by the Locker's call timeout.
func (t Term) Resign(ctx context.Context) error {
	if t.t == nil {
		return nil
	}
	return t.t.end(ctx)
}

// end cancels the term, releases its lease and clears it from its Elector,
// once.
func (t *term) end(ctx context.Context) error {
	t.once.Do(func() {
		t.cancel(ErrResigned)
		t.err = t.lease.Release(ctx)
		e := t.e
		e.mu.Lock()
		if e.cur == t {
			e.cur = nil
		}
		e.mu.Unlock()
		if t.frees {
			e.busy.Store(false)
		}
	})
	return t.err
}

// termContext is a term's context. Like the lease's own context, its Err
// first asks the lease whether it ran out (locker.Lease.Lost), so a leader
// that resumes after a pause past its lease reads the loss at once, with
// cause locker.ErrLockLost.
type termContext struct {
	context.Context
	lease *locker.Lease
}

// Err returns the context's error, after ending the lease if it ran out.
func (c *termContext) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if c.lease.Lost() {
		<-c.Context.Done() // the lease's context ends, and this one with it
	}
	return c.Context.Err()
}
