package guard

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/logtest"
	"github.com/locktag/locktag/internal/redistest"
)

// TestHealthSaysWhy: a Redis user that may not run scripts is reported as
// ReasonUnsupported, not as Redis being unavailable, and logged once with
// the error naming what is refused; the same user given the rights serves
// again (one Info record); a stopped server is ReasonUnavailable. Checks
// that answer the same log nothing more.
func TestHealthSaysWhy(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	const pw = "health-pw"
	srv.SetUser(t, "noscripts", pw, "~*", "&*", "+@all", "-@scripting")
	lk := lockerOn(t, srv.UserPool(t, "noscripts", pw))
	logger, rec := logtest.New()
	h := NewHealth(lk, time.Second, logger)

	for range 2 {
		if r := h.Check(ctx); r != ReasonUnsupported {
			t.Fatalf("a user without scripting: %q, want %q", r, ReasonUnsupported)
		}
	}
	recs := rec.Records()
	if len(recs) != 1 || recs[0].Level != slog.LevelWarn || recs[0].Attrs["reason"] != ReasonUnsupported ||
		!strings.Contains(recs[0].Attrs["error"], "scripting") {
		t.Fatalf("records after two refused checks: %s", rec)
	}

	srv.SetUser(t, "noscripts", pw, "~*", "&*", "+@all")
	if r := h.Check(ctx); r != "" {
		t.Fatalf("the user with every right: %q, want serving", r)
	}
	if recs := rec.Records(); len(recs) != 2 || recs[1].Level != slog.LevelInfo {
		t.Fatalf("records after the recovery: %s", rec)
	}

	srv.Stop()
	if r := h.Check(ctx); r != ReasonUnavailable {
		t.Fatalf("a stopped server: %q, want %q", r, ReasonUnavailable)
	}
	if recs := rec.Records(); len(recs) != 3 || recs[2].Attrs["reason"] != ReasonUnavailable {
		t.Fatalf("records after the server stopped: %s", rec)
	}
}
