package job

import (
	"fmt"
	"time"

	"github.com/locktag/locktag/locker"
)

// Option configures a Job (New, Run). Options are checked once, by New: an
// invalid value is an error wrapping locker.ErrBadOption that names the option,
// never silently corrected.
type Option func(*options)

type options struct {
	wait    time.Duration // 0: skip a held job
	atMost  time.Duration // 0: the Locker's watchdog lease
	atLeast time.Duration // 0: release when fn returns
	misfire time.Duration // RunAt's; -1: not set (half of atLeast)
	errs    []error
}

// evaluateOptions applies opts to the defaults (the zero options) and
// returns the errors of the invalid ones.
func evaluateOptions(opts []Option) (options, []error) {
	o := options{misfire: -1}
	for _, opt := range opts {
		if opt == nil {
			o.errs = append(o.errs, fmt.Errorf("%w: job: nil Option", locker.ErrBadOption))
			continue
		}
		opt(&o)
	}
	if o.atMost > 0 && o.atLeast > o.atMost {
		o.bad("WithAtLeast", o.atLeast, fmt.Sprintf("must not exceed WithAtMost(%v)", o.atMost))
	}
	switch {
	case o.misfire < 0:
		o.misfire = o.atLeast / 2
	case o.atLeast == 0:
		o.bad("WithMisfire", o.misfire, "needs WithAtLeast")
	case o.misfire >= o.atLeast:
		o.bad("WithMisfire", o.misfire, fmt.Sprintf("must be below WithAtLeast(%v)", o.atLeast))
	}
	errs := o.errs
	o.errs = nil
	return o, errs
}

// bad records an invalid value of option.
func (o *options) bad(option string, value any, why string) {
	o.errs = append(o.errs, fmt.Errorf("%w: job.%s(%v): %s", locker.ErrBadOption, option, value, why))
}

// WithWait makes a run wait up to d for a held job instead of skipping it:
// runs then queue first come, first served across replicas, and each one
// runs in turn. The default is 0: a held job is skipped at once with
// ErrSkipped (ShedLock's behaviour). The wait never outlasts the caller's
// context. d must not be negative.
func WithWait(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.bad("WithWait", d, "must not be negative")
			return
		}
		o.wait = d
	}
}

// WithAtMost caps how long one run holds the lock (ShedLock's
// lockAtMostFor): the lock is a fixed lease of d, not renewed, so a
// replica that hangs or is paused frees the job after d at the latest.
// When d passes, the run's context is cancelled with cause
// locker.ErrLockLost and Run reports the loss. The default is the
// Locker's watchdog (locker.WithWatchdog: a 30s lease renewed every 10s
// while the run lasts), which needs no guess of the run's length. d must
// be positive.
func WithAtMost(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			o.bad("WithAtMost", d, "must be positive")
			return
		}
		o.atMost = d
	}
}

// WithAtLeast keeps the lock until d after the run took it (ShedLock's
// lockAtLeastFor), or with Job.RunAt until d after the occurrence's
// scheduled time, even when the run ended sooner: a replica whose clock or
// timer fires a moment later for the same tick then finds the job held
// and skips it, instead of running it a second time. Choose d above the
// largest offset between the replicas' ticks and below the schedule's
// period (half the period is a good start; with RunAt up to most of the
// period). A run longer than that releases the lock when it ends. The
// default is 0: the lock is freed when the run returns. d must not be
// negative, nor above WithAtMost's cap.
func WithAtLeast(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.bad("WithAtLeast", d, "must not be negative")
			return
		}
		o.atLeast = d
	}
}

// WithMisfire sets how late Job.RunAt may take the lock of an occurrence
// and still run it: a replica that gets the lock later than d after the
// occurrence's time (its timer fired late, the process or Redis stalled)
// skips the occurrence with ErrMisfired instead of running it again after the
// replica that ran it on time has let go. An occurrence runs at most once
// while d plus the largest offset between the replicas' clocks stays
// below WithAtLeast. The default is half of WithAtLeast; d must not be
// negative and must be below WithAtLeast, which it needs.
func WithMisfire(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.bad("WithMisfire", d, "must not be negative")
			return
		}
		o.misfire = d
	}
}

// ElectorOption configures an Elector (NewElector). Options are checked
// once, by NewElector: an invalid value is an error wrapping locker.ErrBadOption
// that names the option.
type ElectorOption func(*electorOptions)

type electorOptions struct {
	retry time.Duration
	errs  []error
}

func evaluateElectorOptions(opts []ElectorOption) (electorOptions, []error) {
	o := electorOptions{retry: time.Second}
	for _, opt := range opts {
		if opt == nil {
			o.errs = append(o.errs, fmt.Errorf("%w: job: nil ElectorOption", locker.ErrBadOption))
			continue
		}
		opt(&o)
	}
	errs := o.errs
	o.errs = nil
	return o, errs
}

// WithRetryDelay sets the pause before a candidate campaigns again after a
// campaign call failed because Redis could not be reached (an error
// matching locker.ErrUnavailable): the candidate keeps campaigning until
// its context ends, never faster than this. The default is 1s; d must be
// positive.
func WithRetryDelay(d time.Duration) ElectorOption {
	return func(o *electorOptions) {
		if d <= 0 {
			o.errs = append(o.errs, fmt.Errorf("%w: job.WithRetryDelay(%v): must be positive", locker.ErrBadOption, d))
			return
		}
		o.retry = d
	}
}

// ReadyOption configures a ReadyHandler. Options are checked once, by
// ReadyHandler: an invalid value is an error wrapping locker.ErrBadOption
// that names the option.
type ReadyOption func(*readyOptions)

type readyOptions struct {
	lookup time.Duration // 0: none
	errs   []error
}

func evaluateReadyOptions(opts []ReadyOption) (readyOptions, []error) {
	o := readyOptions{lookup: 250 * time.Millisecond}
	for _, opt := range opts {
		if opt == nil {
			o.errs = append(o.errs, fmt.Errorf("%w: job: nil ReadyOption", locker.ErrBadOption))
			continue
		}
		opt(&o)
	}
	errs := o.errs
	o.errs = nil
	return o, errs
}

// WithReadyLookup bounds the look-up by which a ReadyHandler that does not
// lead names the leader and its term in its 503 body: one read-only
// script per answer (Locker.Inspect), given up after d, and then the body
// says "redis unreachable". The status code never depends on it: it is
// decided from this process's own term before the look-up, and a leader
// makes none. 0 turns the look-up off: no leader is named, and "lost"
// lasts until this process leads again. The default is 250ms, well inside
// a Kubernetes probe's default timeout of 1s; d must not be negative.
func WithReadyLookup(d time.Duration) ReadyOption {
	return func(o *readyOptions) {
		if d < 0 {
			o.errs = append(o.errs, fmt.Errorf("%w: job.WithReadyLookup(%v): must not be negative", locker.ErrBadOption, d))
			return
		}
		o.lookup = d
	}
}
