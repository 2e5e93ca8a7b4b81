package logs

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/locktag/locktag/locker/internal/admin"
)

// MsgForce is a force-release's audit message.
const MsgForce = "locktag: lock force-released"

// Force logs a force-release of name: Warn, or Info when nothing was
// held. It carries name itself (an operator's act is audited by name),
// the reason, the actor and every holder freed.
func (g *Logger) Force(ctx context.Context, name, reason, actor string, all []admin.Freed, err error) {
	level, msg := slog.LevelWarn, MsgForce
	if err != nil {
		msg = MsgForce + " (failed)"
	} else if len(all) == 0 {
		level, msg = slog.LevelInfo, MsgForce+" (nothing held)"
	}
	lg := g.logger()
	if !lg.Enabled(ctx, level) {
		return
	}
	holders := make([]any, len(all))
	for i, f := range all {
		attrs := []any{slog.String("kind", f.Kind), slog.String("owner", f.Owner),
			slog.String("label", f.Label), slog.Int64("fence", f.Fence), slog.Int("holds", f.Holds)}
		if f.Mode != "" {
			attrs = append(attrs, slog.String("mode", f.Mode))
		}
		holders[i] = slog.Group(fmt.Sprint(i), attrs...)
	}
	attrs := []slog.Attr{
		slog.String(KeyKey, name),
		slog.String("reason", reason),
		slog.String("actor", actor),
		slog.Group("holders", holders...),
	}
	if err != nil {
		attrs = append(attrs, slog.String(keyError, err.Error()))
	}
	lg.LogAttrs(ctx, level, msg, attrs...)
}
