package lockecho_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/obstest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"github.com/locktag/locktag/middleware/lockecho"
)

// TestMisconfiguredRouteWithoutCheck: a route whose Lock names a path
// parameter the route lacks, on an Echo without CheckRoutes, is found at
// its first request: 500, one Error record naming the tag, the route and
// the fix, every refused request in the Locker's metric, and the Locker's
// health (stdhttp.Health, interceptor.NewHealthServer: guard.Health) not
// serving, so a rolling deploy stops. A correct route is not flagged.
func TestMisconfiguredRouteWithoutCheck(t *testing.T) {
	srv := redistest.Start(t)
	obs := &obstest.Recorder{}
	lk, err := locker.New(redigo.New(srv.Pool(t)), locker.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lk.Close() })
	logger, rec := logtest.New()
	health := guard.NewHealth(lk, time.Second, slog.New(slog.DiscardHandler))
	ok := func(c echo.Context) error { return c.NoContent(http.StatusNoContent) }
	e := newEcho()
	e.POST("/orders/:id", ok, lockecho.Lock(lk, `key:"k:{path.id}"`, guard.WithLogger(logger)))
	e.POST("/items/:name/hold", ok, lockecho.Lock(lk, `key:"k:{path.id}"`, guard.WithLogger(logger)))

	if w := do(e, http.MethodPost, "/orders/1", ""); w.Code != http.StatusNoContent {
		t.Fatalf("the correct route: %d %s", w.Code, w.Body)
	}
	if reason := health.Check(t.Context()); reason != "" || len(rec.Records()) != 0 || len(tagMistakes(obs)) != 0 {
		t.Fatalf("a correct route flagged: health %q, records:\n%s", reason, rec)
	}

	for range 2 {
		if w := do(e, http.MethodPost, "/items/x/hold", ""); w.Code != http.StatusInternalServerError {
			t.Fatalf("the misconfigured route: %d %s", w.Code, w.Body)
		}
	}
	recs := rec.Records()
	if len(recs) != 1 || recs[0].Level != slog.LevelError || recs[0].Attrs["tag"] != `key:"k:{path.id}"` ||
		!strings.Contains(recs[0].Attrs["route"], "/items/:name/hold") || !strings.Contains(recs[0].Message, "docs/routes.md") {
		t.Fatalf("want one Error record naming tag, route and fix, got:\n%s", rec)
	}
	if n := len(tagMistakes(obs)); n != 2 {
		t.Fatalf("the metric counted %d refused requests, want 2", n)
	}
	if reason := health.Check(t.Context()); reason != guard.ReasonMisconfigured {
		t.Fatalf("health: %q, want %q", reason, guard.ReasonMisconfigured)
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
