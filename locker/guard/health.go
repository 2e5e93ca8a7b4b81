package guard

import (
	"context"
	"errors"
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
)

// Health is the check behind the adapters' health endpoints
// (stdhttp.Health, interceptor.NewHealthServer): one Locker.Healthy call
// bounded by a timeout, the reason a client may see, and a log record each
// time the answer changes — at Warn with the error when the Locker stops
// being able to serve, at Info when it can again. It is safe for
// concurrent use.
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

// Check runs one check: "" when the Locker can serve, else the reason
// (ReasonUnavailable, ReasonUnsupported).
func (h *Health) Check(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	err := h.lk.Healthy(ctx)
	reason := healthReason(err)
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
