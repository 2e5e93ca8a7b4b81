package locker

import "context"

// OutcomeTagMistake is the outcome of a request a lock guard refused
// because its tag names something the request can never have, such as a
// path parameter its route lacks (MistakeEvent; lockotel counts it with
// the Obtain outcomes, though no Obtain ran).
const OutcomeTagMistake = "tag_mistake"

// MistakeObserver is an Observer that also hears of the requests lock
// guards refuse for a mistake in their tag (lockotel's Observer is one).
// TagMistake must not block: it runs on the request's path.
type MistakeObserver interface {
	TagMistake(ctx context.Context, e MistakeEvent)
}

// MistakeEvent is one request a lock guard refused for a mistake in its
// tag: a server mistake, found at request time (docs/routes.md).
type MistakeEvent struct {
	Params Params // the guard's: Name (the tag's name, or the route), Template
	Route  string // where it was found: the adapter's route ("POST /items/:name")
	Err    error  // the guard's error, naming the placeholder
}

// ReportTagMistake hands e to the Locker's Observer when it is a
// MistakeObserver; otherwise it does nothing. Lock guards call it for
// every request they refuse with a tag mistake.
func (l *Locker) ReportTagMistake(ctx context.Context, e MistakeEvent) {
	if l.tel.mis != nil {
		l.tel.mis.TagMistake(ctx, e)
	}
}
