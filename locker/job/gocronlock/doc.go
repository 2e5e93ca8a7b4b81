// Package gocronlock runs go-co-op/gocron v2 jobs on one replica at a time
// with locktag: a gocron.Locker on package locker/job's job locks, and a
// gocron.Elector on a job.Elector. One scheduler option turns either on:
//
//	lk, _ := locker.New(redigo.New(pool))
//	gl, _ := gocronlock.NewLocker(lk, job.WithAtLeast(time.Second))
//	s, _ := gocron.NewScheduler(gocron.WithDistributedLocker(gl))
//
// With the Locker every replica schedules every job and, on each run, the
// replica that takes the job's lock (named by the gocron job's name) runs
// it; the others skip that run. With the Elector only the leader's
// scheduler runs jobs at all. It is a module of its own, so locktag's core
// does not depend on gocron.
package gocronlock
