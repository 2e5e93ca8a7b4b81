package gocronlock

import (
	"context"
	"sync"

	"github.com/go-co-op/gocron/v2"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/job"
)

// Locker is a gocron.Locker: each gocron job's runs take the job lock named
// by the job's name (gocron.WithName; gocron's default is the function's
// name) on a locktag Locker, with job.Job's semantics. It is safe for
// concurrent use.
type Locker struct {
	lk   *locker.Locker
	opts []job.Option
	jobs sync.Map // gocron job name -> *job.Job
}

var _ gocron.Locker = (*Locker)(nil)

// NewLocker returns a gocron.Locker on lk; opts are the job locks' options
// (job.WithAtLeast, job.WithAtMost, job.WithWait; see package job for their
// defaults). Give it to gocron.WithDistributedLocker (every job) or
// gocron.WithDistributedJobLocker (one job, gocron v2.3 and later). Set
// job.WithAtLeast a little below the jobs' period: gocron leaves clock and
// start-time offsets between schedulers to the locker. NewLocker returns
// an error wrapping locker.ErrBadOption when lk is nil or an option is
// invalid.
func NewLocker(lk *locker.Locker, opts ...job.Option) (*Locker, error) {
	if _, err := job.New(lk, "gocronlock", opts...); err != nil {
		return nil, err
	}
	return &Locker{lk: lk, opts: opts}, nil
}

// Lock takes the lock of the gocron job named key for one run, as
// job.Job.Lock does. gocron skips the run when Lock returns an error: one
// matching job.ErrSkipped when another replica runs it, or
// locker.ErrUnavailable when Redis cannot be reached (no replica runs it
// then). gocron calls the returned Lock's Unlock when the run ends.
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	j, err := l.job(key)
	if err != nil {
		return nil, err
	}
	lock, err := j.Lock(ctx)
	if err != nil {
		return nil, err
	}
	return lock, nil
}

// job returns the job.Job of the gocron job named key.
func (l *Locker) job(key string) (*job.Job, error) {
	if j, ok := l.jobs.Load(key); ok {
		return j.(*job.Job), nil
	}
	j, err := job.New(l.lk, key, l.opts...)
	if err != nil {
		return nil, err // an empty name: the options were checked by NewLocker
	}
	got, _ := l.jobs.LoadOrStore(key, j)
	return got.(*job.Job), nil
}

// Elector is a gocron.Elector that answers for a job.Elector: the
// scheduler runs its jobs only while the Elector leads. The job.Elector
// must be campaigning (its Run running) for the replica to ever lead.
type Elector struct{ el *job.Elector }

var _ gocron.Elector = Elector{}

// NewElector returns a gocron.Elector on el, for
// gocron.WithDistributedElector. Run el in the background for as long as
// the scheduler runs:
//
//	go el.Run(ctx, nil)
func NewElector(el *job.Elector) Elector { return Elector{el: el} }

// IsLeader returns nil while this replica leads, and job.ErrNotLeader
// otherwise (gocron then skips the run). A replica paused past its lease
// may answer nil until its timers run after it resumes.
func (e Elector) IsLeader(context.Context) error {
	if e.el != nil && e.el.IsLeader() {
		return nil
	}
	return job.ErrNotLeader
}
