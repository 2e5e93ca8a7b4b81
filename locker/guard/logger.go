package guard

import "log/slog"

// Logger returns the WithLogger logger, for an adapter whose transport has
// no error channel of its own (net/http) to log an Outcome.Err it cannot
// answer with: the handler ran, and then the release failed or the lock
// was lost after the response was written.
func (g *Lock[R]) Logger() *slog.Logger { return g.s.logger }

// Logger returns the WithLogger logger; see (*Lock).Logger.
func (g *Idempotency[R]) Logger() *slog.Logger { return g.s.logger }
