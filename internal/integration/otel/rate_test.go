package otel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/lockotel"
)

// Rate decisions count in locktag.lock.outcomes as admitted and
// rate_limited (canceled and error as for locks), under the decision's
// name, and each has a locktag.rate span of kind "rate".
func TestRateTelemetry(t *testing.T) {
	srv := redistest.Start(t)
	lk, rec := instrumented(t, srv)
	p := locker.RateParams{Limit: 1, Period: time.Hour, Name: "api", Template: "api:{header.X-User}"}
	if _, err := lk.Allow(t.Context(), "api:u1", p); err != nil {
		t.Fatal(err)
	}
	if s := rec.span(t, "locktag.rate"); s[lockotel.AttrOutcome].AsString() != locker.OutcomeAdmitted ||
		s[lockotel.AttrKind].AsString() != "rate" || s[lockotel.AttrLockName].AsString() != "api" ||
		s[lockotel.AttrKeyTemplate].AsString() != "api:{header.X-User}" || s[lockotel.AttrRate].AsString() != "1/1h0m0s" {
		t.Fatalf("admitted span: %v", s)
	}
	if _, err := lk.Allow(t.Context(), "api:u1", p); !errors.Is(err, locker.ErrRateLimited) {
		t.Fatal(err)
	}
	if s := rec.span(t, "locktag.rate"); s[lockotel.AttrOutcome].AsString() != locker.OutcomeRateLimited {
		t.Fatalf("refused span: %v", s)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _ = lk.Allow(ctx, "api:u1", p)
	srv.Stop()
	_, _ = lk.Allow(t.Context(), "api:u1", p)
	for outcome, want := range map[string]int64{
		locker.OutcomeAdmitted: 1, locker.OutcomeRateLimited: 1, locker.OutcomeCanceled: 1, locker.OutcomeError: 1,
	} {
		if n := rec.sum(t, "locktag.lock.outcomes", lockotel.AttrLockName.String("api"), lockotel.AttrOutcome.String(outcome)); n != want {
			t.Errorf("outcome %s: %d, want %d", outcome, n, want)
		}
	}
}
