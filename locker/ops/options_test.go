package ops_test

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/ops"
	"github.com/locktag/locktag/locker/redigo"
)

// TestOptions: every option with a bad value makes NewHandler fail with
// an error wrapping locker.ErrBadOption that names it, all of them together; a
// good value builds. Nothing touches Redis.
func TestOptions(t *testing.T) {
	never := &redis.Pool{Dial: func() (redis.Conn, error) { return nil, errors.New("never dialled") }}
	lk, err := locker.New(redigo.New(never))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	allow := func(*http.Request, ops.Action, string) error { return nil }
	tests := []struct {
		name string
		opts []ops.Option
		want []string // the options named; none for a valid set
	}{
		{"none", nil, nil},
		{"all valid", []ops.Option{
			ops.WithAuthorizer(allow), ops.WithLogger(slog.Default()),
			ops.WithIdentity(func(*http.Request) string { return "me" }),
			ops.WithRedaction(ops.HashNames([]byte("a test redaction secret"))), ops.WithHandleKey([]byte("k")),
			ops.WithPageSize(1), ops.WithRefresh(time.Millisecond),
		}, nil},
		{"nil authorizer", []ops.Option{ops.WithAuthorizer(nil)}, []string{"ops.WithAuthorizer(nil)"}},
		{"nil logger", []ops.Option{ops.WithLogger(nil)}, []string{"ops.WithLogger(nil)"}},
		{"nil identity", []ops.Option{ops.WithIdentity(nil)}, []string{"ops.WithIdentity(nil)"}},
		{"nil redaction", []ops.Option{ops.WithRedaction(nil)}, []string{"ops.WithRedaction(nil)"}},
		{"nil handle key", []ops.Option{ops.WithHandleKey(nil)}, []string{"ops.WithHandleKey(empty key)"}},
		{"empty handle key", []ops.Option{ops.WithHandleKey([]byte{})}, []string{"ops.WithHandleKey(empty key)"}},
		{"zero page size", []ops.Option{ops.WithPageSize(0)}, []string{"ops.WithPageSize(0)"}},
		{"negative page size", []ops.Option{ops.WithPageSize(-1)}, []string{"ops.WithPageSize(-1)"}},
		{"zero refresh", []ops.Option{ops.WithRefresh(0)}, []string{"ops.WithRefresh(0s)"}},
		{"negative refresh", []ops.Option{ops.WithRefresh(-time.Second)}, []string{"ops.WithRefresh(-1s)"}},
		{"all reported", []ops.Option{ops.WithPageSize(0), ops.WithRefresh(0), ops.WithIdentity(nil)},
			[]string{"WithPageSize", "WithRefresh", "WithIdentity"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := ops.NewHandler(lk, tt.opts...)
			if len(tt.want) == 0 {
				if err != nil || h == nil {
					t.Fatalf("NewHandler: %v", err)
				}
				return
			}
			if h != nil || !errors.Is(err, locker.ErrBadOption) {
				t.Fatalf("NewHandler = %v, %v; want locker.ErrBadOption", h, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}
