package stdhttp_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// TestOptionErrors: each of this package's options with a bad value makes
// the constructor fail with an error wrapping locker.ErrBadOption that
// names the option; the same option with a good value builds.
func TestOptionErrors(t *testing.T) {
	lk := newLocker(t)
	public := guard.WithPublicScope()
	route := func(r *http.Request) string { return r.URL.Path }
	tests := []struct {
		name string
		idem bool // NewIdempotency, else NewLock
		opt  stdhttp.Option
		want string // the option named; "" for a valid value
	}{
		{"error handler", false, stdhttp.WithErrorHandler(stdhttp.WriteProblem), ""},
		{"nil error handler", false, stdhttp.WithErrorHandler(nil), "WithErrorHandler"},
		{"source", false, stdhttp.WithSource("x", stdhttp.SourceFunc(func(*http.Request) (string, error) { return "v", nil })), ""},
		{"unnamed source", false, stdhttp.WithSource("", stdhttp.SourceFunc(func(*http.Request) (string, error) { return "v", nil })), "WithSource"},
		{"nil source", false, stdhttp.WithSource("x", nil), "WithSource"},
		{"path value", false, stdhttp.WithPathValue(func(*http.Request, string) string { return "" }), ""},
		{"nil path value", false, stdhttp.WithPathValue(nil), "WithPathValue"},
		{"route", false, stdhttp.WithRoute(route), ""},
		{"nil route", false, stdhttp.WithRoute(nil), "WithRoute"},
		{"nil route (idempotency)", true, stdhttp.WithRoute(nil), "WithRoute"},
		{"key header", true, stdhttp.WithKeyHeader("X-Key"), ""},
		{"empty key header", true, stdhttp.WithKeyHeader(""), "WithKeyHeader"},
		{"replay headers", true, stdhttp.WithReplayHeaders("Location"), ""},
		{"no replay headers", true, stdhttp.WithReplayHeaders(), ""},
		{"empty replay header", true, stdhttp.WithReplayHeaders("Location", ""), "WithReplayHeaders"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.idem {
				_, err = stdhttp.NewIdempotency(lk, public, tt.opt)
			} else {
				_, err = stdhttp.NewLock(lk, `key:"a"`, tt.opt)
			}
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, locker.ErrBadOption) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrBadOption naming %s", err, tt.want)
			}
		})
	}
}
