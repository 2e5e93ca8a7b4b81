package guard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/locktag/locktag/locker"
)

// The reasons Health.Check gives for not serving: words a client of a
// health endpoint may see. They never carry the Redis error, which names
// addresses; the log record does.
const (
	// ReasonUnavailable: Redis did not answer in time, or answered an
	// error (locker.ErrUnavailable).
	ReasonUnavailable = "redis unavailable"
	// ReasonUnsupported: Redis answers, but the server, or the user the
	// Locker logs in as, lacks what locktag needs — scripting, pub/sub or
	// a command the scripts call; an ACL or a managed service's command
	// list (locker.ErrUnsupported; see Locker.ACLRules).
	ReasonUnsupported = "redis refuses what locktag needs (permissions or server version)"
	// ReasonMisconfigured: a lock guard on the Locker found, at request
	// time, a tag naming something its route can never have (Mistakes);
	// the route refuses every request until the tag or the route is fixed
	// and the process restarted (docs/routes.md).
	ReasonMisconfigured = "a lock tag is misconfigured (see the error log)"
)

// Health is the check behind the adapters' health endpoints
// (stdhttp.Health, interceptor.NewHealthServer): one Locker.Healthy call
// bounded by a timeout, the reason a client may see, and a log record each
// time the answer changes — at Warn with the error when the Locker stops
// being able to serve, at Info when it can again. A Locker whose lock
// guards found a tag mistake within MistakeWindow of the process's start
// (Mistakes) is not serving, without a Redis call. It is safe for concurrent use.
type Health struct {
	lk      *locker.Locker
	timeout time.Duration
	log     *slog.Logger

	mu   sync.Mutex
	last string // the last check's reason; "" serving (also before the first)
}

// NewHealth returns the health check of lk, each check bounded by timeout
// (at most; the caller's context may end it sooner), logging its changes
// to log (nil: slog.Default()).
func NewHealth(lk *locker.Locker, timeout time.Duration, log *slog.Logger) *Health {
	if log == nil {
		log = slog.Default()
	}
	return &Health{lk: lk, timeout: timeout, log: log}
}

// startupMistake returns the first tag mistake on lk found within
// MistakeWindow of the process's start.
func startupMistake(lk *locker.Locker) (Mistake, bool) {
	for _, m := range Mistakes(lk) {
		if m.At.Sub(started) <= MistakeWindow {
			return m, true
		}
	}
	return Mistake{}, false
}

// Check runs one check: "" when the Locker can serve, else the reason
// (ReasonMisconfigured, ReasonUnavailable, ReasonUnsupported).
func (h *Health) Check(ctx context.Context) string {
	var reason string
	var err error
	if m, ok := startupMistake(h.lk); ok {
		reason = ReasonMisconfigured
		err = fmt.Errorf("tag `%s` on %s: %w", m.Tag, m.Route, m.Err)
	} else {
		ctx, cancel := context.WithTimeout(ctx, h.timeout)
		defer cancel()
		err = h.lk.Healthy(ctx)
		reason = healthReason(err)
	}
	h.mu.Lock()
	changed := reason != h.last
	h.last = reason
	h.mu.Unlock()
	switch {
	case !changed:
	case reason == "":
		h.log.Info("locktag: health: serving again")
	default:
		h.log.Warn("locktag: health: not serving", slog.String("reason", reason), slog.String("error", err.Error()))
	}
	return reason
}

// healthReason is the reason for Healthy's err; "" for nil.
func healthReason(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, locker.ErrUnsupported):
		return ReasonUnsupported
	}
	return ReasonUnavailable
}
