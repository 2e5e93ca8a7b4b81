package browser_test

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/ops"
	"github.com/locktag/locktag/locker/redigo"
)

// newLocker returns a Locker on a fresh redis-server.
func newLocker(t *testing.T) (*locker.Locker, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	lk, err := locker.New(redigo.New(srv.Pool(t)), locker.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	return lk, srv
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Eventually(t, what, cond)
}

// allowAll is an authorizer that allows everything.
func allowAll(*http.Request, ops.Action, string) error { return nil }
