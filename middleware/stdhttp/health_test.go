package stdhttp_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// TestHealthFollowsRedis stops and restarts a real redis-server and polls
// the handler (with a deadline) until it reports each state.
func TestHealthFollowsRedis(t *testing.T) {
	srv := redistest.Start(t)
	lk, err := locker.New(redigo.New(srv.Pool(t)), locker.WithCallTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	h, err := stdhttp.Health(lk, stdhttp.WithHealthRetryAfter(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}

	await := func(code int, body, retryAfter string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
			if w.Code == code {
				if got := strings.TrimSpace(w.Body.String()); got != body {
					t.Fatalf("status %d: body %q, want %q", code, got, body)
				}
				if got := w.Header().Get("Retry-After"); got != retryAfter {
					t.Fatalf("status %d: Retry-After %q, want %q", code, got, retryAfter)
				}
				if got := w.Header().Get("Content-Type"); got != "application/json" {
					t.Fatalf("Content-Type %q", got)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("health stayed %d %q, want %d", w.Code, w.Body.String(), code)
			}
			time.Sleep(20 * time.Millisecond) // poll interval, not synchronisation
		}
	}
	const up, down = `{"status":"SERVING"}`, `{"status":"NOT_SERVING","reason":"redis unavailable"}`
	await(http.StatusOK, up, "")
	srv.Stop()
	await(http.StatusServiceUnavailable, down, "2")
	srv.Restart()
	await(http.StatusOK, up, "")
}

// TestHealthOptions: a bad value is a construction error wrapping
// locker.ErrBadOption that names the option; a good one builds.
func TestHealthOptions(t *testing.T) {
	tests := []struct {
		name string
		opt  stdhttp.HealthOption
		want string // "" for a valid option
	}{
		{"timeout", stdhttp.WithHealthTimeout(time.Second), ""},
		{"zero timeout", stdhttp.WithHealthTimeout(0), "WithHealthTimeout(0s)"},
		{"negative timeout", stdhttp.WithHealthTimeout(-time.Second), "WithHealthTimeout(-1s)"},
		{"retry after", stdhttp.WithHealthRetryAfter(time.Second), ""},
		{"zero retry after", stdhttp.WithHealthRetryAfter(0), "WithHealthRetryAfter(0s)"},
		{"negative retry after", stdhttp.WithHealthRetryAfter(-time.Millisecond), "WithHealthRetryAfter(-1ms)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := stdhttp.Health(nil, tt.opt)
			if tt.want == "" {
				if err != nil || h == nil {
					t.Fatalf("Health: %v", err)
				}
				return
			}
			if h != nil || !errors.Is(err, locker.ErrBadOption) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Health = %v, %v; want ErrBadOption naming %s", h, err, tt.want)
			}
		})
	}
}
