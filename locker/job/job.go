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
// returns an error wrapping ErrBadOption, naming each mistake, when lk is
// nil, name is empty or an option is invalid.
func New(lk *locker.Locker, name string, opts ...Option) (*Job, error) {
	o, errs := evaluateOptions(opts)
	if lk == nil {
		errs = append(errs, fmt.Errorf("%w: nil Locker", ErrBadOption))
	}
	if name == "" {
		errs = append(errs, fmt.Errorf("%w: empty job name", ErrBadOption))
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
// lock while fn runs (and for WithAtLeast after it started). It returns:
//
//   - an error matching ErrSkipped (and locker.ErrNotObtained) when another
//     run holds the lock: fn did not run;
//   - an error matching locker.ErrUnavailable when Redis could not be
//     asked: fn did not run;
//   - fn's error otherwise, joined with an error matching
//     locker.ErrLockLost when the lock was lost while fn ran (another run
//     may have started meanwhile).
//
// The lock is released when fn returns or panics. A failed release is not
// returned (fn's outcome stands, and the lock runs out by itself): the
// Locker logs it (locker.WithLogger).
func (j *Job) Run(ctx context.Context, fn Func) (err error) {
	l, err := j.Lock(ctx)
	if err != nil {
		return err
	}
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
func (j *Job) Lock(ctx context.Context) (*Lock, error) {
	le, err := j.lk.Obtain(ctx, j.name, j.params)
	if err != nil {
		if errors.Is(err, locker.ErrNotObtained) {
			return nil, fmt.Errorf("%w: %w", ErrSkipped, err)
		}
		return nil, err
	}
	return &Lock{lease: le, taken: time.Now(), atLeast: j.o.atLeast}, nil
}

// Lock is one run's hold of a job's lock (Job.Lock). It is safe for
// concurrent use.
type Lock struct {
	lease   *locker.Lease
	taken   time.Time // when Obtain returned: WithAtLeast counts from here
	atLeast time.Duration
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
	if keep := l.atLeast - time.Since(l.taken); keep > 0 {
		return l.lease.ReleaseAfter(ctx, keep)
	}
	return l.lease.Release(ctx)
}
