package locker

import (
	"context"

	"github.com/locktag/locktag/locker/internal/admin"
)

// The kinds of what is stored beside locks (Stored.Kind).
const (
	// KindIdempotency is an idempotency record (Idempotent; read it with
	// InspectIdempotency).
	KindIdempotency = "idempotency"
	// KindRate is a rate key's state (Allow; read it with InspectRate).
	KindRate = "rate"
)

// Stored is one name ListStored found, with what is stored under it.
type Stored struct {
	// Name is the name as given to Obtain, Allow or Idempotent (an
	// idempotency record's is IdempotencyName's).
	Name string
	// Kind is KindMutex, KindSemaphore or KindRW (a lock: Inspect it),
	// KindIdempotency (InspectIdempotency) or KindRate (InspectRate). A
	// name used as several kinds is found once per kind.
	Kind string
}

// ListStored is List for everything the Locker stores under its key
// prefix: one page of the locks of each kind, idempotency records and
// rate keys whose name starts with prefix. Start with cursor "" and pass
// next back until it is ""; a cursor of List serves too. Each page is one
// SCAN step (COUNT 1000) in the read-only script List runs, on every
// master in turn, with List's guarantees: a name present for the whole
// listing is found at least once. Errors: ErrUnavailable (retry the same
// cursor), ErrBadOption for a cursor it did not make.
func (l *Locker) ListStored(ctx context.Context, prefix, cursor string) (found []Stored, next string, err error) {
	all, next, err := admin.ListStored(ctx, l.admin(), l.o.bounds(), l.o.prefix, prefix, cursor)
	if err != nil {
		return nil, "", err
	}
	found = make([]Stored, len(all))
	for i, s := range all {
		found[i] = Stored(s)
	}
	return found, next, nil
}
