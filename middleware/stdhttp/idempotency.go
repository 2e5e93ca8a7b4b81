package stdhttp

import (
	"context"
	"net/http"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/stdhttp/internal/httpcore"
)

// Idempotency is an idempotency guard for net/http handlers, with the Gin
// adapter's semantics and stored-response format. It is immutable and
// safe for concurrent use.
type Idempotency struct {
	g *guard.Idempotency[*http.Request]
	s *settings
}

// NewIdempotency builds an idempotency guard. opts are guard options — a
// scope is required: guard.WithScope with a func(*http.Request) (string,
// error), or guard.WithPublicScope — and this package's WithKeyHeader,
// WithReplayHeaders, WithRoute and WithErrorHandler. Errors:
// guard.ErrNilLocker, guard.ErrNoScope, errors wrapping locker.ErrBadOption.
func NewIdempotency(l *locker.Locker, opts ...Option) (*Idempotency, error) {
	g, s, err := httpcore.NewIdempotency[*http.Request](l, opts, evaluateOptions)
	if err != nil {
		return nil, err
	}
	return &Idempotency{g: g, s: s}, nil
}

// MustIdempotency is NewIdempotency, panicking with its error.
func MustIdempotency(l *locker.Locker, opts ...Option) *Idempotency {
	return httpcore.Must(NewIdempotency(l, opts...))
}

// Wrap returns next guarded: it runs at most once per (route, caller scope,
// Idempotency-Key), and retries get the stored response with
// "Idempotent-Replayed: true". A missing or bad key is 400 (unless
// guard.WithOptionalKey), no scope 401, a body over its cap 413; a retry
// while the first request runs 409 + Retry-After, a key reused for another
// request 422, Redis down 503 + Retry-After. A panic, or a Lock inside that
// refuses the request, frees the key. The route is WithRoute's (the ServeMux
// pattern), else the path. Statuses and lifecycle: docs/idempotency.md.
func (m *Idempotency) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := m.s.Route(r)
		if route == "" {
			route = r.URL.Path
		}
		q := httpcore.IdemRequest(r, route, m.s.Header, func(max int64) ([]byte, error) { return httpcore.ReadBody(r, max) })
		rec := &httpcore.Recorder{ResponseWriter: w, Cap: &httpcore.Capture{Max: m.g.MaxResponseBytes()}}
		o := m.g.Run(r.Context(), r, q, func(ctx context.Context) guard.Answer {
			next.ServeHTTP(rec, r.WithContext(ctx))
			rec.Cap.Snapshot(w.Header()) // nothing written: what net/http will send
			return rec.Cap.Answer(max(rec.Status, http.StatusOK), m.s.ReplayHeaders, rec.Status != 0)
		})
		switch o.Kind {
		case guard.OK:
			if o.Err != nil { // the response is sent; a retry may run the handler again
				httpcore.LogAfter(r.Context(), m.g.Logger(), o)
			}
		case guard.Replay:
			if err := httpcore.Replay(w, o.Record); err != nil {
				refuse(w, r, m.s, guard.Outcome{Kind: guard.Internal, Err: err, Name: o.Name, Idempotency: true})
			}
		default:
			refuse(w, r, m.s, o)
		}
	})
}
