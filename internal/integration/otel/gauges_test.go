package otel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/internal/testwait"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/lockotel"
)

// locktag.lock.held and locktag.lock.waiters count locks held and Obtain
// calls waiting now, by lock name only (never by key), through holds,
// waits, hand-over, release and loss.
func TestHeldAndWaitersNow(t *testing.T) {
	srv := redistest.Start(t)
	lk, rec := instrumented(t, srv, locker.WithWatchdog(400*time.Millisecond, 50*time.Millisecond))
	ctx := context.Background()
	pay := locker.Params{Name: "POST /orders/{id}/pay", Wait: 10 * time.Second}
	ship := locker.Params{Name: "POST /orders/{id}/ship"}
	payName, shipName := lockotel.AttrLockName.String(pay.Name), lockotel.AttrLockName.String(ship.Name)
	gauges := func(wantPay, wantShip, wantWaiters int64) func() bool {
		return func() bool {
			return rec.sum(t, "locktag.lock.held", payName) == wantPay &&
				rec.sum(t, "locktag.lock.held", shipName) == wantShip &&
				rec.sum(t, "locktag.lock.waiters", payName) == wantWaiters
		}
	}

	a := mustObtain(t, lk, ctx, "order:1", pay)
	b := mustObtain(t, lk, ctx, "order:2", pay)
	s := mustObtain(t, lk, ctx, "order:3", ship) // another name: counted apart
	inner := mustObtain(t, lk, a.Context(), "order:1", pay)
	eventually(t, 5*time.Second, "held 2 pay (a re-entry is no new lock), 1 ship", gauges(2, 1, 0))

	got := make(chan *locker.Lease, 1)
	go func() {
		le, err := lk.Obtain(ctx, "order:2", pay)
		if err != nil {
			t.Error(err)
		}
		got <- le
	}()
	eventually(t, 5*time.Second, "one waiter on pay", gauges(2, 1, 1))
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waiter := testwait.Recv(t, got, "the waiter's lease") // handed over: still 2 held, no waiter
	eventually(t, 5*time.Second, "hand-over: held 2 pay, no waiter", gauges(2, 1, 0))

	for _, le := range []*locker.Lease{inner, a, waiter} {
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 5*time.Second, "pay released", gauges(0, 1, 0))
	if _, err := srv.Do("DEL", "locktag:{order:3}"); err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, s.Context().Done(), "ship's loss at its next renewal")
	eventually(t, 5*time.Second, "ship lost", gauges(0, 0, 0))

	// No data point names a key.
	var rm metricdata.ResourceMetrics
	if err := rec.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range d.DataPoints {
					if _, has := dp.Attributes.Value(lockotel.AttrKey); has {
						t.Errorf("%s carries %s", m.Name, lockotel.AttrKey)
					}
				}
			}
		}
	}
}

// Spans and metrics name their instrumentation scope with a version.
func TestScopeVersion(t *testing.T) {
	srv := redistest.Start(t)
	lk, rec := instrumented(t, srv)
	le := mustObtain(t, lk, context.Background(), "v", locker.Params{})
	if err := le.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := rec.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	if len(rm.ScopeMetrics) == 0 {
		t.Fatal("no metrics")
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != lockotel.ScopeName || sm.Scope.Version == "" {
			t.Errorf("metric scope %+v, want %s with a version", sm.Scope, lockotel.ScopeName)
		}
	}
	for _, s := range rec.spans.Ended() {
		if sc := s.InstrumentationScope(); sc.Name != lockotel.ScopeName || sc.Version == "" {
			t.Errorf("span %s scope %+v", s.Name(), sc)
		}
	}
}
