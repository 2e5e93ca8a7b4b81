package stdhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
)

// HealthOption changes a Health handler. An invalid value makes Health
// return an error wrapping locker.ErrBadOption that names the option.
type HealthOption func(*healthOptions)

type healthOptions struct {
	timeout    time.Duration
	retryAfter time.Duration
	errs       []error
}

func (o *healthOptions) bad(option string, d time.Duration) {
	o.errs = append(o.errs, fmt.Errorf("%w: stdhttp.%s(%v): must be positive", locker.ErrBadOption, option, d))
}

// WithHealthTimeout bounds each check (one trivial script per Redis node);
// a node slower than d counts as down. d must be positive. The default is
// 2s.
func WithHealthTimeout(d time.Duration) HealthOption {
	return func(o *healthOptions) {
		if d <= 0 {
			o.bad("WithHealthTimeout", d)
			return
		}
		o.timeout = d
	}
}

// WithHealthRetryAfter sets the Retry-After header of a 503, rounded up to
// whole seconds. d must be positive. The default is 5s.
func WithHealthRetryAfter(d time.Duration) HealthOption {
	return func(o *healthOptions) {
		if d <= 0 {
			o.bad("WithHealthRetryAfter", d)
			return
		}
		o.retryAfter = d
	}
}

// Health returns a /healthz-style handler that follows lk.Healthy
// (guard.Health): 200 {"status":"SERVING"}, or 503
// {"status":"NOT_SERVING","reason":"..."} with Retry-After while Redis is
// unreachable or refuses what locktag needs, and until restart from the first
// request a lock guard refused for a mistake in its tag within
// guard.MistakeWindow of the process's start. The reason never carries the
// Redis error; the log record does. Each request runs one check, bounded by
// its context and WithHealthTimeout. The error wraps locker.ErrBadOption,
// naming each invalid option. The answers: docs/operations.md#health-checks.
func Health(lk *locker.Locker, opts ...HealthOption) (http.Handler, error) {
	o := healthOptions{timeout: 2 * time.Second, retryAfter: 5 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if err := errors.Join(o.errs...); err != nil {
		return nil, err
	}
	retry := strconv.Itoa(int((o.retryAfter + time.Second - 1) / time.Second))
	check := guard.NewHealth(lk, o.timeout, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		if reason := check.Check(r.Context()); reason != "" {
			h.Set("Retry-After", retry)
			w.WriteHeader(http.StatusServiceUnavailable)
			body, _ := json.Marshal(struct {
				Status string `json:"status"`
				Reason string `json:"reason"`
			}{"NOT_SERVING", reason})
			_, _ = w.Write(append(body, '\n'))
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"status":"SERVING"}` + "\n"))
	}), nil
}
