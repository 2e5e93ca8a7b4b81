package guard

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/locktag/locktag/locker"
)

// outageEvery is how often a guard repeats its record while Redis stays
// unavailable: a long outage is not silent, a busy route does not flood.
const outageEvery = time.Minute

// Log record messages of the outage log.
const (
	logOutage       = "locktag: redis unavailable, requests refused"
	logOutageOpen   = "locktag: redis unavailable, requests run without their lock"
	logOutageStill  = "locktag: redis still unavailable"
	logOutageEnded  = "locktag: redis answers again"
	logProtocol     = "locktag: redis holds records of another protocol, requests refused; a release outside this one's compatibility window shares the Redis (docs/versioning.md)"
	logTagMistake   = "locktag: the lock tag names something the request cannot have; fix the tag or the route, and check the routes before traffic (docs/routes.md)"
	maxMistakeNames = 64
)

// outage is a guard's log of the requests it could not guard because Redis
// was unavailable (Unavailable refusals, FailedOpen runs): one record when
// they start, at most one per outageEvery while they last, counting the
// requests in between, and one when Redis answers the guard again. Each
// guard keeps its own, so a record names the route or method that refused,
// and guards share no state. The zero value is ready.
type outage struct {
	// down is read without mu by every request Redis answered: the
	// common case costs one atomic load.
	down atomic.Bool

	mu       sync.Mutex
	since    time.Time // when the outage began
	last     time.Time // when it was last logged
	count    int       // requests refused (or run open) since it began
	unlogged int       // of those, since the last record
	every    time.Duration
}

// refused notes a request that Redis's unavailability refused (o.Kind
// Unavailable) or let through without the lock (FailedOpen), and logs it
// if it starts an outage or outageEvery has passed since the last record.
func (u *outage) refused(ctx context.Context, l *slog.Logger, o Outcome) {
	now := time.Now()
	every := outageEvery
	u.mu.Lock()
	if u.every > 0 {
		every = u.every
	}
	first := !u.down.Load()
	if first {
		u.down.Store(true)
		u.since, u.count, u.unlogged = now, 0, 0
	}
	u.count++
	u.unlogged++
	log := first || now.Sub(u.last) >= every
	n, since := u.unlogged, u.since
	if log {
		u.last, u.unlogged = now, 0
	}
	u.mu.Unlock()
	if !log {
		return
	}
	msg := logOutage
	protocol := errors.Is(o.Err, locker.ErrProtocol)
	switch {
	case !first && !protocol:
		msg = logOutageStill
	case protocol:
		msg = logProtocol
	case o.Kind == FailedOpen:
		msg = logOutageOpen
	}
	attrs := make([]slog.Attr, 0, 6)
	attrs = append(attrs, slog.String("name", o.Name))
	if o.Tag != "" {
		attrs = append(attrs, slog.String("tag", o.Tag))
	}
	attrs = append(attrs, slog.String("outcome", o.Kind.String()), slog.Any("error", o.Err))
	if !first {
		attrs = append(attrs, slog.Int("refused", n), slog.Duration("down_for", now.Sub(since)))
	}
	l.LogAttrs(ctx, slog.LevelError, msg, attrs...)
}

// answered notes a request Redis answered (a lock obtained or found busy,
// an idempotency key claimed or found), ending an outage if there is one.
func (u *outage) answered(ctx context.Context, l *slog.Logger, name string) {
	if !u.down.Load() {
		return
	}
	u.mu.Lock()
	if !u.down.Load() { // another request ended it
		u.mu.Unlock()
		return
	}
	u.down.Store(false)
	n, since := u.count, u.since
	u.mu.Unlock()
	l.LogAttrs(ctx, slog.LevelInfo, logOutageEnded, slog.String("name", name),
		slog.Int("refused", n), slog.Duration("down_for", time.Since(since)))
}

// onceEach remembers the names a guard logged a TagMistake for, so that a
// route or method logs its mistake once rather than per request. It holds
// at most maxMistakeNames, then starts afresh: an adapter whose names are
// not bounded (a custom WithRoute returning raw paths) logs again now and
// then instead of growing it without end.
type onceEach struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

// first reports whether name is new.
func (s *onceEach) first(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[name]; ok {
		return false
	}
	if s.seen == nil || len(s.seen) >= maxMistakeNames {
		s.seen = make(map[string]struct{})
	}
	s.seen[name] = struct{}{}
	return true
}
