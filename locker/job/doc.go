// Package job runs background work on one replica at a time, and elects a
// leader among replicas, on locktag's lock core (package locker): the same
// leases, watchdog, fencing tokens and first-come-first-served queue the
// request guards use.
//
// # Jobs
//
// A Job is ShedLock's scheduler lock for Go. Every replica runs the same
// schedule and calls Run on each tick; the run that takes the job's lock
// runs, the others are skipped with ErrSkipped (or, with WithWait, queue
// and run in turn):
//
//	report, err := job.New(lk, "job:stock-report", job.WithAtLeast(30*time.Second))
//	...
//	err = report.Run(ctx, func(ctx context.Context, token int64) error {
//		return writeReport(ctx, token) // ctx is cancelled if the lock is lost
//	})
//	if errors.Is(err, job.ErrSkipped) { /* another replica ran this tick */ }
//
// The lock lasts while the run does, renewed by the Locker's watchdog, or
// at most WithAtMost (ShedLock's lockAtMostFor). WithAtLeast (ShedLock's
// lockAtLeastFor) keeps it a while after a short run, so a replica whose
// tick comes a moment later does not run the same tick again. A scheduler
// that knows when a run was due calls RunAt instead: the lock is then kept
// from the tick, and a replica that got it too late (WithMisfire) skips the
// tick rather than run it twice. Job.Lock and Lock.Unlock split a run for
// schedulers with lock hooks; package locker/job/gocronlock (its own
// module) plugs them into go-co-op/gocron.
//
// # Leaders
//
// An Elector holds a named lock for as long as its process leads: renewed
// by the watchdog, with a fencing token per term, and the leader's context
// cancelled the moment a renewal fails or the lease runs out. The other
// candidates wait in the lock's queue and take over first come, first
// served — at most one lease after a crashed leader's last renewal:
//
//	el, err := job.NewElector(lk, "leader:billing")
//	...
//	err = el.Run(ctx, func(ctx context.Context, t job.Term) error {
//		return consume(ctx, t.Token()) // until ctx ends: leadership lost or resigned
//	})
//
// IsLeader answers "do I lead now?" for code that runs elsewhere, e.g. a
// scheduler asking before each run, and Changed signals each change of
// leadership. ReadyHandler is a readiness endpoint that is ready on the
// leader only, for a load balancer that must route to it.
//
// # What a lock cannot do
//
// A process paused past its lease (a long GC pause, a frozen VM) resumes
// believing it holds the lock until its timers run. Its context is then
// cancelled, but work already under way may write first: fence every write
// the exclusivity matters for with the run's or term's token (locker.Fence
// and locker.Fenced, or a `WHERE fence <= $token` in SQL). See docs/jobs.md.
package job
