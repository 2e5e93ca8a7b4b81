package job

import "errors"

// Sentinel errors. Errors returned by this package wrap one of them or a
// locker sentinel; test with errors.Is.
var (
	// ErrSkipped: the run did not happen because another run of the job
	// holds its lock (on any replica), at once or, with WithWait, until
	// the wait or the caller's context ran out; or, from RunAt, because the
	// lock came too late (ErrMisfired). It is wrapped together with the reason,
	// so errors.Is(err, locker.ErrNotObtained) holds too for a held lock,
	// and errors.Is(err, context.Canceled) when ctx ended.
	ErrSkipped = errors.New("job: skipped")
	// ErrMisfired: Job.RunAt was called, or took the occurrence's lock, later
	// than WithMisfire after its scheduled time and did not run it: another
	// replica may have run it already. It comes wrapped with ErrSkipped.
	ErrMisfired = errors.New("job: misfired: too late for the occurrence")
	// ErrResigned is the cause a term's context is cancelled with when its
	// leader resigned (Term.Resign, Elector.Resign).
	ErrResigned = errors.New("job: resigned")
	// ErrNotLeader: this process does not lead (gocronlock's elector
	// answers it to a scheduler that asks).
	ErrNotLeader = errors.New("job: not the leader")
	// ErrCampaigning: Campaign or Run was called on an Elector that is
	// already campaigning or leading. One Elector holds one candidacy; end
	// the term (Term.Resign) or the Run first.
	ErrCampaigning = errors.New("job: elector already campaigning or leading")
)
