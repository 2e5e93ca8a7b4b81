package locker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/locktag/locktag/locker/internal/keeper"
	"github.com/locktag/locktag/locker/internal/lockerr"
)

// lossCause says why a held lock was lost, for its log record.
type lossCause = keeper.Loss

// The causes (see keeper.Loss).
const (
	lossRefused       = keeper.Refused
	lossExtendRefused = keeper.ExtendRefused
	lossExpired       = keeper.Expired
	lossForced        = keeper.Forced
)

// Log record messages and attribute keys (lockotel's span attributes
// carry the same locktag.* names).
const (
	logKeyName     = "locktag.lock.name"
	logKeyTemplate = "locktag.key.template"
	logKeyKey      = "locktag.key"
	logKeyFence    = "locktag.lock.fence"
	logKeyLocker   = "locktag.locker.id"
	logLost        = "locktag: lock lost"
	logReleaseFail = "locktag: release failed"
	logClaimLost   = "locktag: idempotency claim lost"
	logClaimEnd    = "locktag: idempotency release failed"
	logKeyCause    = "cause"
	logKeyError    = "error"
	logKeyHeld     = "held_for"
	logKeyOp       = "op"
)

func (l *Locker) logger() *slog.Logger {
	if l.o.logger != nil {
		return l.o.logger
	}
	return slog.Default()
}

// lossText says why root was lost in words an on-call engineer can act on.
func lossText(root *Lease, why lossCause, lastErr error) string {
	var fe *lockerr.Forced
	switch {
	case why == lossForced && errors.As(lastErr, &fe):
		return "force-released: " + fe.Reason
	case why == lossRefused:
		return "renewal refused: the key was deleted or taken over (a DEL, eviction, or a Redis restart without persistence)"
	case why == lossExtendRefused:
		return "extend refused: the key was deleted or taken over (a DEL, eviction, or a Redis restart without persistence)"
	case lastErr != nil && errors.Is(lastErr, ErrUnavailable):
		return "redis unavailable: renewals failed until the lease ran out"
	case lastErr != nil:
		return "renewals failed until the lease ran out"
	case !root.t.watchdog:
		return "fixed lease overrun: the TTL ran out before Release"
	}
	return "the lease ran out before a renewal was confirmed"
}

// lockAttrs are the attributes every record about le's lock carries.
func (l *Locker) lockAttrs(le *Lease, attrs []slog.Attr) []slog.Attr {
	p := le.root.t.params
	attrs = append(attrs, slog.String(logKeyName, lockName(p)))
	if p.Template != "" {
		attrs = append(attrs, slog.String(logKeyTemplate, p.Template))
	}
	if l.o.keyAttribute {
		attrs = append(attrs, slog.String(logKeyKey, le.key))
	}
	return append(attrs, slog.Int64(logKeyFence, le.fence), slog.String(logKeyLocker, l.sh.SID))
}

// logLost logs that root was lost, and why.
func (l *Locker) logLost(root *Lease, why lossCause, lastErr error) {
	lg := l.logger()
	ctx := context.Background()
	if !lg.Enabled(ctx, slog.LevelError) {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String(logKeyCause, lossText(root, why, lastErr)))
	if lastErr != nil && why != lossForced {
		attrs = append(attrs, slog.String(logKeyError, lastErr.Error()))
	}
	attrs = l.lockAttrs(root, attrs)
	attrs = append(attrs, slog.Duration(logKeyHeld, time.Since(root.since)))
	lg.LogAttrs(ctx, slog.LevelError, logLost, attrs...)
}

// logRelease logs a Release that failed. ErrNotHeld is logged at Debug:
// a lost lock was logged when it was lost.
func (l *Locker) logRelease(ctx context.Context, le *Lease, err error) {
	level, cause := slog.LevelWarn, "release failed: the lock stays held until its lease runs out"
	if errors.Is(err, ErrNotHeld) {
		level, cause = slog.LevelDebug, "release of a lock this lease no longer holds (lost, expired, or released before)"
	}
	lg := l.logger()
	if !lg.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 7)
	attrs = append(attrs, slog.String(logKeyCause, cause), slog.String(logKeyError, err.Error()))
	lg.LogAttrs(ctx, level, logReleaseFail, l.lockAttrs(le, attrs)...)
}

// claimLossText says why an idempotency claim's in-flight marker was lost.
func claimLossText(why lossCause, lastErr error) string {
	switch {
	case why == lossRefused:
		return "renewal refused: the in-flight record was deleted or taken over (a DEL, eviction, or a Redis restart without persistence); another request with the key may execute"
	case lastErr != nil && errors.Is(lastErr, ErrUnavailable):
		return "redis unavailable: renewals failed until the in-flight lease ran out; another request with the key may execute"
	case lastErr != nil:
		return "renewals failed until the in-flight lease ran out; another request with the key may execute"
	}
	return "the in-flight lease ran out before a renewal was confirmed; another request with the key may execute"
}

// claimAttrs are the attributes every record about c carries: its name
// (the route or full method), and its record name only with
// WithKeyAttribute (it is derived from the client's key).
func (l *Locker) claimAttrs(c *Claim, attrs []slog.Attr) []slog.Attr {
	attrs = append(attrs, slog.String(logKeyName, c.name), slog.String(logKeyLocker, l.sh.SID))
	if l.o.keyAttribute {
		attrs = append(attrs, slog.String(logKeyKey, c.k.Record()))
	}
	return attrs
}

// logClaimLost logs that c's in-flight marker was lost, and why.
func (l *Locker) logClaimLost(c *Claim, why lossCause, lastErr error) {
	lg := l.logger()
	ctx := context.Background()
	if !lg.Enabled(ctx, slog.LevelError) {
		return
	}
	attrs := make([]slog.Attr, 0, 5)
	attrs = append(attrs, slog.String(logKeyCause, claimLossText(why, lastErr)))
	if lastErr != nil {
		attrs = append(attrs, slog.String(logKeyError, lastErr.Error()))
	}
	attrs = l.claimAttrs(c, attrs)
	attrs = append(attrs, slog.Duration(logKeyHeld, time.Since(c.since)))
	lg.LogAttrs(ctx, slog.LevelError, logClaimLost, attrs...)
}

// logClaimEnd logs a Complete (mode "c") or Abandon ("a") whose script
// failed or found the record no longer the claim's. A claim already
// logged as lost is logged at Debug: the record is not its own any more.
func (l *Locker) logClaimEnd(ctx context.Context, c *Claim, mode string, lost bool, err error) {
	op, level, cause := "complete", slog.LevelWarn, "storing the outcome failed: the record stays in flight until its lease runs out, and a retry after that executes again"
	if mode == "a" {
		op, cause = "abandon", "freeing the key failed: the record stays in flight until its lease runs out, and retries meanwhile are refused as in flight"
	}
	switch {
	case lost:
		level, cause = slog.LevelDebug, "release of a claim already lost (logged when it was lost)"
	case errors.Is(err, ErrNotHeld):
		cause = "the in-flight record was no longer this claim's (its lease ran out, or it was deleted or taken over): nothing was stored, and another request with the key may have executed"
	}
	lg := l.logger()
	if !lg.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 5)
	attrs = append(attrs, slog.String(logKeyOp, op), slog.String(logKeyCause, cause), slog.String(logKeyError, err.Error()))
	lg.LogAttrs(ctx, level, logClaimEnd, l.claimAttrs(c, attrs)...)
}
