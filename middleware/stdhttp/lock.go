package stdhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/stdhttp/internal/httpcore"
)

// Lock is one compiled lock tag for net/http handlers. It is safe for
// concurrent use; build it once, at registration, and wrap as many
// handlers with it as share the tag.
type Lock struct {
	g       *guard.Lock[*http.Request]
	s       *settings
	custom  bool  // the application replaced the "path" source
	maxBody int64 // the guard's WithMaxRequestBytes, set before any request
}

// NewLock compiles tag (docs/tags.md) into a lock for net/http handlers
// (for a rate tag, a rate limit: see ExampleNewLock_rate).
// opts are guard options (guard.WithFailOpen, guard.WithMaxValueLen,
// guard.WithMaxRequestBytes, ...) and this package's WithSource,
// WithPathValue, WithRoute and WithErrorHandler. Errors:
// guard.ErrNilLocker, errors wrapping locker.ErrBadOption, or a
// *keyexpr.TagError for a bad tag or a placeholder naming an unknown
// source. Nothing touches Redis.
func NewLock(l *locker.Locker, tag string, opts ...Option) (*Lock, error) {
	if l == nil {
		return nil, guard.ErrNilLocker
	}
	s, err := evaluateOptions(guard.LockGuards, opts)
	if err != nil {
		return nil, err
	}
	_, customPath := s.Sources["path"]
	m := &Lock{s: s, custom: customPath, maxBody: guard.DefaultMaxRequestBytes}
	if m.g, err = guard.CompileLock(l, tag, m.sources(), opts...); err != nil {
		return nil, err
	}
	m.maxBody = m.g.MaxRequestBytes()
	return m, nil
}

// MustLock is NewLock for tags written in code: it panics with NewLock's
// error.
func MustLock(l *locker.Locker, tag string, opts ...Option) *Lock {
	return httpcore.Must(NewLock(l, tag, opts...))
}

// Wrap returns next guarded by the lock; m.Wrap is a
// func(http.Handler) http.Handler for routers' middleware chains
// (chi's r.With(m.Wrap)). next runs with the lease's context, which is
// cancelled with cause locker.ErrLockLost if the lock is lost, and never
// without the lock unless guard.WithFailOpen allows it. The lock is
// released when next returns or panics. Errors after next answered are
// logged at Warn. Statuses: docs/http.md#options-statuses-and-logs.
func (m *Lock) Wrap(next http.Handler) http.Handler { return &guarded{m: m, next: next} }

// guarded is a handler behind a Lock; CheckRoute recognises it.
type guarded struct {
	m    *Lock
	next http.Handler
}

func (h *guarded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := h.m
	rec := &httpcore.Recorder{ResponseWriter: w}
	o := m.g.Run(r.Context(), r, httpcore.RouteName(r.Method, m.s.Route(r)), func(ctx context.Context) error {
		if q := guard.QuotaFromContext(ctx); q != nil && m.g.Spec().Rate.N > 0 {
			httpcore.SetRateLimit(w.Header(), q, 0) // this guard's admission, before the handler writes
		}
		h.next.ServeHTTP(rec, r.WithContext(ctx))
		if rec.Status == 0 {
			return errNotWritten
		}
		if rec.Status < 200 || rec.Status > 299 {
			return guard.ErrUnsuccessful // a keep tag keeps the lock after 2xx only
		}
		return nil
	})
	switch {
	case !o.Kind.Ran() && (o.Kind != guard.Lost || rec.Status == 0):
		refuse(w, r, m.s, o)
	case o.Err != nil && o.Kind != guard.FailedOpen: // the guard logs those once per outage
		httpcore.LogAfter(r.Context(), m.g.Logger(), o)
	}
}

// WrapFunc is Wrap for a handler function.
func (m *Lock) WrapFunc(next func(http.ResponseWriter, *http.Request)) http.Handler {
	return m.Wrap(http.HandlerFunc(next))
}

// Check reports, before traffic, whether the lock's tag can be resolved on
// a route pattern: every {path.X} must be a parameter of the pattern —
// {X} or {X...} (ServeMux), {X} or {X:regexp} (chi, gorilla/mux), or a
// trailing * for {path.*} (chi). A leading method ("POST /orders/{id}") is
// allowed. The error wraps ErrBadRule and is a *keyexpr.TagError naming
// the placeholder. Found at request time instead, the mistake is a 500
// and one log record per route, never a 400. With a "path" WithSource the
// application reads path parameters itself and Check reports nothing.
func (m *Lock) Check(pattern string) error {
	if m.custom {
		return nil
	}
	if err := httpcore.CheckParams(m.g.Spec(), wildcards(pattern), "{", "}"); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadRule, pattern, err)
	}
	return nil
}

// Handle checks pattern (Check) and registers next, guarded, on mux:
//
//	pay := stdhttp.MustLock(lk, `key:"order:{path.id}" wait:"2s"`)
//	if err := pay.Handle(mux, "POST /orders/{id}/pay", http.HandlerFunc(payOrder)); err != nil {
//		log.Fatal(err)
//	}
func (m *Lock) Handle(mux *http.ServeMux, pattern string, next http.Handler) error {
	if err := m.Check(pattern); err != nil {
		return err
	}
	mux.Handle(pattern, m.Wrap(next))
	return nil
}

// FailedOpen returns the error for which a guard.WithFailOpen lock ran the
// handler without the lock, or nil if the request holds its lock.
func FailedOpen(r *http.Request) error { return guard.FailOpenCause(r.Context()) }

// errNotWritten tells the guard that the handler wrote nothing.
var errNotWritten = errors.New("stdhttp: nothing written")
