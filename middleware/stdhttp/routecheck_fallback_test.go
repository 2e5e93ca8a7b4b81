package stdhttp_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/obstest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware/stdhttp"
)

// TestMisconfiguredRouteWithoutCheck: a ServeMux route registered with
// Wrap, which checks nothing, whose Lock names a wildcard the pattern
// lacks, is found at its first request: 500, one Error record naming the
// tag, the route and the fix, every refused request in the Locker's
// metric, and Health answering 503 with the reason, so a rolling deploy
// stops. A correct route is not flagged.
func TestMisconfiguredRouteWithoutCheck(t *testing.T) {
	srv := redistest.Start(t)
	obs := &obstest.Recorder{}
	lk, err := locker.New(redigo.New(srv.Pool(t)), locker.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	logger, rec := logtest.New()
	health, err := stdhttp.Health(lk)
	if err != nil {
		t.Fatal(err)
	}
	probe := func() (int, string) {
		w := httptest.NewRecorder()
		health.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		return w.Code, strings.TrimSpace(w.Body.String())
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}", stdhttp.MustLock(lk, `key:"k:{path.id}"`, guard.WithLogger(logger)).Wrap(ok))
	mux.Handle("POST /items/{name}/hold", stdhttp.MustLock(lk, `key:"k:{path.id}"`, guard.WithLogger(logger)).Wrap(ok))
	serve := func(target string) int {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, target, nil))
		return w.Code
	}

	if code := serve("/orders/1"); code != http.StatusNoContent {
		t.Fatalf("the correct route: %d", code)
	}
	if code, body := probe(); code != http.StatusOK || len(rec.Records()) != 0 || len(tagMistakes(obs)) != 0 {
		t.Fatalf("a correct route flagged: health %d %s, records:\n%s", code, body, rec)
	}

	for range 2 {
		if code := serve("/items/x/hold"); code != http.StatusInternalServerError {
			t.Fatalf("the misconfigured route: %d", code)
		}
	}
	recs := rec.Records()
	if len(recs) != 1 || recs[0].Level != slog.LevelError || recs[0].Attrs["tag"] != `key:"k:{path.id}"` ||
		!strings.Contains(recs[0].Attrs["route"], "/items/{name}/hold") || !strings.Contains(recs[0].Message, "docs/routes.md") {
		t.Fatalf("want one Error record naming tag, route and fix, got:\n%s", rec)
	}
	if n := len(tagMistakes(obs)); n != 2 {
		t.Fatalf("the metric counted %d refused requests, want 2", n)
	}
	if code, body := probe(); code != http.StatusServiceUnavailable || body != `{"status":"NOT_SERVING","reason":"`+guard.ReasonMisconfigured+`"}` {
		t.Fatalf("health: %d %s, want 503 saying %q", code, body, guard.ReasonMisconfigured)
	}
}

// tagMistakes returns the Observer's tag_mistake events.
func tagMistakes(obs *obstest.Recorder) []string {
	var out []string
	for _, e := range obs.Events() {
		if strings.HasPrefix(e, "tag_mistake ") {
			out = append(out, e)
		}
	}
	return out
}
