package logs

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/locktag/locktag/locker/internal/keeper"
	"github.com/locktag/locktag/locker/internal/lockerr"
	"github.com/locktag/locktag/locker/internal/records"
)

// Messages and attribute keys.
const (
	KeyName      = "locktag.lock.name"
	KeyTemplate  = "locktag.key.template"
	KeyKey       = "locktag.key"
	KeyFence     = "locktag.lock.fence"
	KeyLocker    = "locktag.locker.id"
	MsgLost      = "locktag: lock lost"
	MsgRelease   = "locktag: release failed"
	MsgClaimLost = "locktag: idempotency claim lost"
	MsgClaimEnd  = "locktag: idempotency release failed"
	MsgProtocol  = "locktag: redis holds records of another protocol; calls that meet them are refused (docs/versioning.md)"
	MsgRisk      = "locktag: redis may break a lock's guarantees"
	MsgSkipped   = "locktag: a redis replica was not checked"
	keyRisk      = "risk"
	keyCause     = "cause"
	keyError     = "error"
	keyHeld      = "held_for"
	keyOp        = "op"
)

// Logger writes one Locker's records.
type Logger struct {
	L    *slog.Logger // nil: slog.Default() at the time of each record
	SID  string       // the Locker's id
	Keys bool         // records carry the resolved key
}

func (g *Logger) logger() *slog.Logger {
	if g.L != nil {
		return g.L
	}
	return slog.Default()
}

// Lock is what a record says of a lock.
type Lock struct {
	Name, Template string // Params.Name and Params.Template
	Key            string
	Fence          int64
	Watchdog       bool      // a watchdog lease (not a fixed TTL)
	Since          time.Time // obtained
}

// lockName is the name records (and lockotel) use for a lock with
// Params.Name name and Params.Template template.
func lockName(name, template string) string {
	switch {
	case name != "":
		return name
	case template != "":
		return template
	}
	return "locker"
}

// ClaimName is the name records and events use for an idempotency check
// with IdempotencyParams.Name name.
func ClaimName(name string) string {
	if name == "" {
		return "idempotency"
	}
	return name
}

// lossText says why lk was lost in words an on-call engineer can act on.
func lossText(lk Lock, why keeper.Loss, lastErr error) string {
	var fe *lockerr.Forced
	switch {
	case why == keeper.Forced && errors.As(lastErr, &fe):
		return "force-released: " + fe.Reason
	case why == keeper.Refused:
		return "renewal refused: the key was deleted or taken over (a DEL, eviction, or a Redis restart without persistence)"
	case why == keeper.Stepped:
		return "the redis server's clock stepped: the lease ends, since tokens minted next may be lower than this one (keep the server's clock slewed by NTP, never stepped)"
	case why == keeper.ExtendRefused:
		return "extend refused: the key was deleted or taken over (a DEL, eviction, or a Redis restart without persistence)"
	case lastErr != nil && errors.Is(lastErr, lockerr.ErrUnavailable):
		return "redis unavailable: renewals failed until the lease ran out"
	case lastErr != nil:
		return "renewals failed until the lease ran out"
	case !lk.Watchdog:
		return "fixed lease overrun: the TTL ran out before Release"
	}
	return "the lease ran out before a renewal was confirmed"
}

func (g *Logger) lockAttrs(lk Lock, attrs []slog.Attr) []slog.Attr {
	attrs = append(attrs, slog.String(KeyName, lockName(lk.Name, lk.Template)))
	if lk.Template != "" {
		attrs = append(attrs, slog.String(KeyTemplate, lk.Template))
	}
	if g.Keys {
		attrs = append(attrs, slog.String(KeyKey, lk.Key))
	}
	return append(attrs, slog.Int64(KeyFence, lk.Fence), slog.String(KeyLocker, g.SID))
}

// Lost logs that lk was lost, and why.
func (g *Logger) Lost(lk Lock, why keeper.Loss, lastErr error) {
	lg, ctx := g.logger(), context.Background()
	if !lg.Enabled(ctx, slog.LevelError) {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String(keyCause, lossText(lk, why, lastErr)))
	if lastErr != nil && why != keeper.Forced {
		attrs = append(attrs, slog.String(keyError, lastErr.Error()))
	}
	attrs = g.lockAttrs(lk, attrs)
	attrs = append(attrs, slog.Duration(keyHeld, time.Since(lk.Since)))
	lg.LogAttrs(ctx, slog.LevelError, MsgLost, attrs...)
}

// Release logs a Release that failed. ErrNotHeld is logged at Debug: a
// lost lock was logged when it was lost.
func (g *Logger) Release(ctx context.Context, lk Lock, err error) {
	level, cause := slog.LevelWarn, "release failed: the lock stays held until its lease runs out"
	if errors.Is(err, lockerr.ErrNotHeld) {
		level, cause = slog.LevelDebug, "release of a lock this lease no longer holds (lost, expired, or released before)"
	}
	lg := g.logger()
	if !lg.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 7)
	attrs = append(attrs, slog.String(keyCause, cause), slog.String(keyError, err.Error()))
	lg.LogAttrs(ctx, level, MsgRelease, g.lockAttrs(lk, attrs)...)
}

// Protocol logs the first record of another protocol a Locker's calls
// met (lockerr.Protocol in err), at Error: a release outside this one's
// compatibility window shares its Redis. The Locker logs it once.
func (g *Logger) Protocol(ctx context.Context, err error) {
	attrs := []slog.Attr{slog.String(keyError, err.Error())}
	if g.SID != "" {
		attrs = append(attrs, slog.String(KeyLocker, g.SID))
	}
	g.logger().LogAttrs(ctx, slog.LevelError, MsgProtocol, attrs...)
}

// Risk logs, at Warn, what Check found on the server and accepted (an
// eviction policy allowed by option, a policy it cannot read). The Locker
// logs each once.
func (g *Logger) Risk(what string) {
	attrs := []slog.Attr{slog.String(keyRisk, what)}
	if g.SID != "" {
		attrs = append(attrs, slog.String(KeyLocker, g.SID))
	}
	g.logger().LogAttrs(context.Background(), slog.LevelWarn, MsgRisk, attrs...)
}

// Skipped logs, at Debug, a replica Check did not check because it did
// not answer (or the replicas could not be listed).
func (g *Logger) Skipped(what string) {
	lg, ctx := g.logger(), context.Background()
	if !lg.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := []slog.Attr{slog.String(keyCause, what)}
	if g.SID != "" {
		attrs = append(attrs, slog.String(KeyLocker, g.SID))
	}
	lg.LogAttrs(ctx, slog.LevelDebug, MsgSkipped, attrs...)
}

// Claim is what a record says of an idempotency claim.
type Claim struct {
	Name   string // IdempotencyParams.Name, or "idempotency"
	Record string // the record's name: the key, shown only with Keys
	Since  time.Time
}

func claimLossText(why keeper.Loss, lastErr error) string {
	switch {
	case why == keeper.Refused:
		return "renewal refused: the in-flight record was deleted or taken over (a DEL, eviction, or a Redis restart without persistence); another request with the key may execute"
	case lastErr != nil && errors.Is(lastErr, lockerr.ErrUnavailable):
		return "redis unavailable: renewals failed until the in-flight lease ran out; another request with the key may execute"
	case lastErr != nil:
		return "renewals failed until the in-flight lease ran out; another request with the key may execute"
	}
	return "the in-flight lease ran out before a renewal was confirmed; another request with the key may execute"
}

func (g *Logger) claimAttrs(c Claim, attrs []slog.Attr) []slog.Attr {
	attrs = append(attrs, slog.String(KeyName, c.Name), slog.String(KeyLocker, g.SID))
	if g.Keys {
		attrs = append(attrs, slog.String(KeyKey, c.Record))
	}
	return attrs
}

// ClaimLost logs that c's in-flight marker was lost, and why.
func (g *Logger) ClaimLost(c Claim, why keeper.Loss, lastErr error) {
	lg, ctx := g.logger(), context.Background()
	if !lg.Enabled(ctx, slog.LevelError) {
		return
	}
	attrs := make([]slog.Attr, 0, 5)
	attrs = append(attrs, slog.String(keyCause, claimLossText(why, lastErr)))
	if lastErr != nil {
		attrs = append(attrs, slog.String(keyError, lastErr.Error()))
	}
	attrs = g.claimAttrs(c, attrs)
	attrs = append(attrs, slog.Duration(keyHeld, time.Since(c.Since)))
	lg.LogAttrs(ctx, slog.LevelError, MsgClaimLost, attrs...)
}

// ClaimEnd logs a Complete (mode records.Complete) or Abandon whose script
// failed or found the record no longer the claim's. A claim already lost
// is logged at Debug: the record is not its own any more.
func (g *Logger) ClaimEnd(ctx context.Context, c Claim, mode string, lost bool, err error) {
	op, level, cause := "complete", slog.LevelWarn, "storing the outcome failed: the record stays in flight until its lease runs out, and a retry after that executes again"
	if mode == records.Abandon {
		op, cause = "abandon", "freeing the key failed: the record stays in flight until its lease runs out, and retries meanwhile are refused as in flight"
	}
	switch {
	case lost:
		level, cause = slog.LevelDebug, "release of a claim already lost (logged when it was lost)"
	case errors.Is(err, lockerr.ErrNotHeld):
		cause = "the in-flight record was no longer this claim's (its lease ran out, or it was deleted or taken over): nothing was stored, and another request with the key may have executed"
	}
	lg := g.logger()
	if !lg.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 5)
	attrs = append(attrs, slog.String(keyOp, op), slog.String(keyCause, cause), slog.String(keyError, err.Error()))
	lg.LogAttrs(ctx, level, MsgClaimEnd, g.claimAttrs(c, attrs)...)
}
