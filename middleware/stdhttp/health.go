package stdhttp

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/locktag/locktag/locker"
)

// HealthOption changes a Health handler.
type HealthOption func(*healthOptions)

type healthOptions struct {
	timeout    time.Duration
	retryAfter time.Duration
}

// WithHealthTimeout bounds each check (one trivial script per Redis node);
// a node slower than d counts as down. The default is 2s.
func WithHealthTimeout(d time.Duration) HealthOption {
	return func(o *healthOptions) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// WithHealthRetryAfter sets the Retry-After header of a 503, rounded up to
// whole seconds. The default is 5s.
func WithHealthRetryAfter(d time.Duration) HealthOption {
	return func(o *healthOptions) {
		if d > 0 {
			o.retryAfter = d
		}
	}
}

// Health returns a /healthz-style handler that follows Redis reachability
// through lk.Healthy: every node of a Locker from locker.New, a majority of
// masters for locker.NewRedlock. It answers every method with a small JSON
// body, never cached:
//
//	200 {"status":"SERVING"}
//	503 {"status":"NOT_SERVING","reason":"redis unavailable"} + Retry-After
//
// The reason never carries the Redis error (it names addresses); log
// lk.Healthy's error where the details are wanted. Each request runs one
// check, bounded by the request's context and WithHealthTimeout:
//
//	mux.Handle("GET /healthz", stdhttp.Health(lk))
func Health(lk *locker.Locker, opts ...HealthOption) http.Handler {
	o := healthOptions{timeout: 2 * time.Second, retryAfter: 5 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	retry := strconv.Itoa(int((o.retryAfter + time.Second - 1) / time.Second))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), o.timeout)
		defer cancel()
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		if err := lk.Healthy(ctx); err != nil {
			h.Set("Retry-After", retry)
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"status":"NOT_SERVING","reason":"redis unavailable"}` + "\n"))
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"status":"SERVING"}` + "\n"))
	})
}
