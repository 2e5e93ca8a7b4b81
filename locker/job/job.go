package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locktag/locktag/locker"
)

// Func is the work of one run. ctx is the run's lock's context: it is
// cancelled with cause locker.ErrLockLost when the lock is lost (a
// renewal refused, WithAtMost's cap reached, a force-release), and when the
// caller's context ends. token is the run's fencing token: larger than
// every earlier run's, so storage can refuse the writes of a run that lost
// its lock (locker.Fence, locker.Fenced).
type Func func(ctx context.Context, token int64) error

// Job is a named piece of work that runs on one replica at a time: every
// replica calls Run on its own schedule, and a run finding another one
// holding the job's lock is skipped. The zero Job is not usable; build one
// with New. A Job is safe for concurrent use.
type Job struct {
	lk     *locker.Locker
	name   string
	params locker.Params
	o      options
}

// New returns the job name on lk. The name is the lock's key in lk, so
// every replica must use the same one, and a Job and any other lock of
// that name exclude each other; prefer names like "job:stock-report". New
// returns an error wrapping locker.ErrBadOption, naming each mistake, when lk is
// nil, name is empty or an option is invalid.
func New(lk *locker.Locker, name string, opts ...Option) (*Job, error) {
	o, errs := evaluateOptions(opts)
	if lk == nil {
		errs = append(errs, fmt.Errorf("%w: job: nil Locker", locker.ErrBadOption))
	}
	if name == "" {
		errs = append(errs, fmt.Errorf("%w: job: empty job name", locker.ErrBadOption))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Job{lk: lk, name: name, o: o, params: locker.Params{
		TTL:   o.atMost,
		Wait:  o.wait,
		Name:  name,
		Label: "job " + name,
	}}, nil
}

// Run runs fn as the job name on lk: New(lk, name, opts...) followed by
// Job.Run, for a call site that builds the job once per run.
func Run(ctx context.Context, lk *locker.Locker, name string, fn Func, opts ...Option) error {
	j, err := New(lk, name, opts...)
	if err != nil {
		return err
	}
	return j.Run(ctx, fn)
}

// Name is the job's name, its lock's key.
func (j *Job) Name() string { return j.name }

// Run runs fn once if no other run of the job holds its lock, and holds the
// lock while fn runs (and, with WithAtLeast, until that long after it took
// the lock); the lock is released when fn returns or panics. Run returns
// an error matching ErrSkipped (and locker.ErrNotObtained) when another run
// holds the lock, or locker.ErrUnavailable when Redis could not be asked:
// fn did not run. Otherwise it returns fn's error, joined with an error
// matching locker.ErrLockLost when the lock was lost while fn ran (another
// run may have started meanwhile). A failed release is not returned but
// logged (locker.WithLogger); the lock runs out by itself. See
// docs/jobs.md#jobs.
func (j *Job) Run(ctx context.Context, fn Func) error {
	l, err := j.Lock(ctx)
	if err != nil {
		return err
	}
	return l.run(ctx, fn)
}

// RunAt runs fn for the occurrence of the job scheduled at at (a tick of
// the caller's schedule), at most once across replicas whose clocks agree
// within WithAtLeast minus WithMisfire. It is Run, except that WithAtLeast
// keeps the lock until at plus that long, wherever in the window the run
// began, and that an occurrence reached, or whose lock is taken, more than
// WithMisfire after at is not run: RunAt returns an error matching
// ErrMisfired and ErrSkipped. Without WithAtLeast, RunAt is Run. See
// docs/jobs.md#runat-when-you-know-the-tick.
func (j *Job) RunAt(ctx context.Context, at time.Time, fn Func) error {
	if j.o.atLeast <= 0 {
		return j.Run(ctx, fn)
	}
	// Already late: do not touch the lock, which by now may be the next
	// occurrence's (a scheduler catching up on missed ticks).
	if late := time.Since(at); late > j.o.misfire {
		return lateError(late, j.o.misfire)
	}
	l, err := j.lock(ctx, at)
	if err != nil {
		return err
	}
	if late := l.taken.Sub(at); late > j.o.misfire {
		_ = l.Unlock(ctx) // kept until at + WithAtLeast, as if it had run
		return lateError(late, j.o.misfire)
	}
	return l.run(ctx, fn)
}

// lateError is RunAt's error for an occurrence reached late after it.
func lateError(late, misfire time.Duration) error {
	return fmt.Errorf("%w: %w: %v after the occurrence (WithMisfire %v)", ErrSkipped, ErrMisfired, late.Round(time.Millisecond), misfire)
}

// run runs fn under l and unlocks it.
func (l *Lock) run(ctx context.Context, fn Func) (err error) {
	lctx := l.Context()
	defer func() {
		if l.lease.Lost() {
			err = errors.Join(err, lossCause(lctx))
		}
		_ = l.Unlock(ctx)
	}()
	return fn(lctx, l.Token())
}

// lossCause is the cause of a lost lease's context, or locker.ErrLockLost
// if the context has not been cancelled yet.
func lossCause(ctx context.Context) error {
	if c := context.Cause(ctx); errors.Is(c, locker.ErrLockLost) {
		return c
	}
	return locker.ErrLockLost
}

// Lock takes the job's lock for one run the caller carries out itself (a
// scheduler's hook, as gocronlock does): do the work with Lock.Context and
// Lock.Token, then call Unlock. Its errors are Run's when the lock is not
// taken: ErrSkipped, or an error matching locker.ErrUnavailable.
func (j *Job) Lock(ctx context.Context) (*Lock, error) { return j.lock(ctx, time.Time{}) }

// lock takes the job's lock, kept by Unlock until at + WithAtLeast (at
// zero: from when it was taken).
func (j *Job) lock(ctx context.Context, at time.Time) (*Lock, error) {
	le, err := j.lk.Obtain(ctx, j.name, j.params)
	if err != nil {
		if errors.Is(err, locker.ErrNotObtained) {
			return nil, fmt.Errorf("%w: %w", ErrSkipped, err)
		}
		return nil, err
	}
	taken := time.Now()
	if at.IsZero() {
		at = taken
	}
	return &Lock{lease: le, taken: taken, until: at.Add(j.o.atLeast)}, nil
}

// Lock is one run's hold of a job's lock (Job.Lock). It is safe for
// concurrent use.
type Lock struct {
	lease *locker.Lease
	taken time.Time // when Obtain returned
	until time.Time // WithAtLeast's end: Unlock keeps the lock until then
}

// Context is the run's context: it carries the lease and is cancelled with
// cause locker.ErrLockLost if the lock is lost, or when the context given
// to Lock ends.
func (l *Lock) Context() context.Context { return l.lease.Context() }

// Token is the run's fencing token.
func (l *Lock) Token() int64 { return l.lease.Token() }

// Lost reports whether the lock was lost before Unlock.
func (l *Lock) Lost() bool { return l.lease.Lost() }

// Unlock ends the run's hold: the lock is freed at once, or, with
// WithAtLeast, kept in Redis until that long after Lock took it and then
// freed by itself. Unlock ignores ctx's cancellation (a cancelled run still
// releases) and is bounded by the Locker's call timeout. It returns an
// error matching locker.ErrNotHeld when the lock was lost or already
// unlocked, and one matching locker.ErrUnavailable when Redis could not be
// reached (the lock then runs out with its lease).
func (l *Lock) Unlock(ctx context.Context) error {
	if keep := time.Until(l.until); keep > 0 {
		return l.lease.ReleaseAfter(ctx, keep)
	}
	return l.lease.Release(ctx)
}
