package otel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/lockotel"
)

type recorded struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
}

func instrumented(t *testing.T, srv *redistest.Server, opts ...locker.Option) (*locker.Locker, *recorded) {
	t.Helper()
	rec := &recorded{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rec.reader))
	lk := newLocker(t, srv, append([]locker.Option{locker.WithObserver(lockotel.New(lockotel.WithTracerProvider(tp), lockotel.WithMeterProvider(mp)))}, opts...)...)
	return lk, rec
}

// span returns the attributes of the last ended span called name.
func (r *recorded) span(t *testing.T, name string) map[attribute.Key]attribute.Value {
	t.Helper()
	ended := r.spans.Ended()
	for i := len(ended) - 1; i >= 0; i-- {
		if ended[i].Name() == name {
			m := map[attribute.Key]attribute.Value{}
			for _, kv := range ended[i].Attributes() {
				m[kv.Key] = kv.Value
			}
			return m
		}
	}
	t.Fatalf("no ended span %q", name)
	return nil
}

func (r *recorded) events(name string) []string {
	var out []string
	for _, s := range r.spans.Ended() {
		if s.Name() == name {
			for _, e := range s.Events() {
				out = append(out, e.Name)
			}
		}
	}
	return out
}

// sum returns the value of counter metric name for the data point whose
// attributes include want.
func (r *recorded) sum(t *testing.T, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			if d, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range d.DataPoints {
					if hasAll(dp.Attributes, want) {
						total += dp.Value
					}
				}
			}
			if d, ok := m.Data.(metricdata.Histogram[float64]); ok {
				for _, dp := range d.DataPoints {
					if hasAll(dp.Attributes, want) {
						total += int64(dp.Count)
					}
				}
			}
		}
	}
	return total
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

func TestTelemetryPaths(t *testing.T) {
	srv := redistest.Start(t)
	lk, rec := instrumented(t, srv, locker.WithWatchdog(time.Second, 100*time.Millisecond))
	ctx := context.Background()
	name := lockotel.AttrLockName.String("pay")
	p := locker.Params{Name: "pay", Template: "order:{path.id}", Wait: 20 * time.Millisecond}

	le := mustObtain(t, lk, ctx, "order:1", p)
	got := rec.span(t, "locktag.obtain")
	if got[lockotel.AttrOutcome].AsString() != locker.OutcomeAcquired || got[lockotel.AttrLockName].AsString() != "pay" ||
		got[lockotel.AttrKeyTemplate].AsString() != "order:{path.id}" || got[lockotel.AttrFence].AsInt64() != le.Token() ||
		got[lockotel.AttrMode].AsString() != "watchdog" {
		t.Fatalf("obtain span attributes %v", got)
	}
	if _, ok := got[lockotel.AttrKey]; ok {
		t.Fatal("resolved key recorded without WithKeyAttribute")
	}
	inner := mustObtain(t, lk, le.Context(), "order:1", p)
	if rec.span(t, "locktag.obtain")[lockotel.AttrOutcome].AsString() != locker.OutcomeReentered {
		t.Fatal("re-entry not recorded")
	}
	if _, err := lk.Obtain(ctx, "order:1", p); !errors.Is(err, locker.ErrNotObtained) {
		t.Fatal(err)
	}
	if rec.span(t, "locktag.obtain")[lockotel.AttrOutcome].AsString() != locker.OutcomeBusy {
		t.Fatal("busy not recorded")
	}
	// Renewals happen while held.
	eventually(t, 5*time.Second, "a renewal", func() bool {
		return rec.sum(t, "locktag.lock.renewals", name, lockotel.AttrRenewal.String("ok")) > 0
	})
	_ = inner.Release(ctx)
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rec.span(t, "locktag.release")
	if h := rec.span(t, "locktag.hold"); h[lockotel.AttrFence].AsInt64() != le.Token() {
		t.Fatalf("hold span %v", h)
	}

	// Lost: the key deleted behind the holder's back.
	lost := mustObtain(t, lk, ctx, "order:2", p)
	if _, err := srv.Do("DEL", "locktag:{order:2}"); err != nil {
		t.Fatal(err)
	}
	<-lost.Context().Done()
	eventually(t, 5*time.Second, "hold span ended", func() bool {
		for _, e := range rec.events("locktag.hold") {
			if e == "locktag.lock_lost" {
				return true
			}
		}
		return false
	})

	for outcome, want := range map[string]int64{
		locker.OutcomeAcquired: 2, locker.OutcomeReentered: 1, locker.OutcomeBusy: 1, locker.OutcomeLost: 1,
	} {
		if got := rec.sum(t, "locktag.lock.outcomes", name, lockotel.AttrOutcome.String(outcome)); got != want {
			t.Errorf("outcomes{%s} = %d, want %d", outcome, got, want)
		}
	}
	if got := rec.sum(t, "locktag.lock.acquire.duration", name); got != 4 {
		t.Errorf("acquire.duration count %d, want 4", got)
	}
	if got := rec.sum(t, "locktag.lock.wait.duration", name); got != 1 {
		t.Errorf("wait.duration count %d, want 1 (the busy wait)", got)
	}
	if got := rec.sum(t, "locktag.lock.waiters", name); got != 0 {
		t.Errorf("waiters = %d after all waits ended", got)
	}
	if got := rec.sum(t, "locktag.lock.hold.duration", name); got != 2 {
		t.Errorf("hold.duration count %d, want 2", got)
	}

	// Error: Redis gone.
	srv.Stop()
	if _, err := lk.Obtain(ctx, "order:3", p); !errors.Is(err, locker.ErrUnavailable) {
		t.Fatal(err)
	}
	if rec.span(t, "locktag.obtain")[lockotel.AttrOutcome].AsString() != locker.OutcomeError {
		t.Fatal("error not recorded")
	}
}

func TestTelemetryKeyAttributeOptIn(t *testing.T) {
	srv := redistest.Start(t)
	lk, rec := instrumented(t, srv, locker.WithKeyAttribute(true))
	le := mustObtain(t, lk, context.Background(), "user:42", locker.Params{})
	defer le.Release(context.Background())
	got := rec.span(t, "locktag.obtain")
	if got[lockotel.AttrKey].AsString() != "user:42" || got[lockotel.AttrLockName].AsString() != "locker" {
		t.Fatalf("attributes %v", got)
	}
}

func TestTelemetryIdempotency(t *testing.T) {
	srv := redistest.Start(t)
	lk, rec := instrumented(t, srv)
	ctx := context.Background()
	p := locker.IdempotencyParams{Name: "POST /payments"}
	name := lockotel.AttrLockName.String("POST /payments")

	first, err := lk.Idempotent(ctx, "rec-1", "body-a", p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lk.Idempotent(ctx, "rec-1", "body-a", p); !errors.Is(err, locker.ErrInFlight) {
		t.Fatal(err)
	}
	if err := first.Complete(ctx, []byte("200 ok")); err != nil {
		t.Fatal(err)
	}
	if c, err := lk.Idempotent(ctx, "rec-1", "body-a", p); err != nil {
		t.Fatal(err)
	} else if _, ok := c.Replay(); !ok {
		t.Fatal("not a replay")
	}
	if _, err := lk.Idempotent(ctx, "rec-1", "body-b", p); !errors.Is(err, locker.ErrMismatch) {
		t.Fatal(err)
	}
	if rec.span(t, "locktag.idempotency")[lockotel.AttrOutcome].AsString() != locker.IdempotencyMismatch {
		t.Fatal("mismatch not on the span")
	}
	for outcome, want := range map[string]int64{
		locker.IdempotencyExecuted: 1, locker.IdempotencyConflict: 1, locker.IdempotencyReplayed: 1, locker.IdempotencyMismatch: 1,
	} {
		if got := rec.sum(t, "locktag.idempotency.outcomes", name, lockotel.AttrOutcome.String(outcome)); got != want {
			t.Errorf("idempotency.outcomes{%s} = %d, want %d", outcome, got, want)
		}
	}
}

// TestTelemetryGlobalProviderSetLater: a Locker built before the global
// tracer provider is set traces into it once it is (the untraced fast path
// only runs while the global provider is OpenTelemetry's stand-in). It sets
// the process's global provider, so it runs last in this file.
// globalProviderSet records that TestTelemetryGlobalProviderSetLater set
// the global tracer provider: OTel's global can go from its delegating
// default to a real provider only once per process, so a repeated run
// (-count > 1) has nothing left to test.
var globalProviderSet bool

func TestTelemetryGlobalProviderSetLater(t *testing.T) {
	if globalProviderSet {
		t.Skip("the global tracer provider was already set by an earlier run in this process (-count > 1)")
	}
	globalProviderSet = true
	srv := redistest.Start(t)
	lk := newLocker(t, srv, locker.WithObserver(lockotel.New()))
	ctx := context.Background()
	le := mustObtain(t, lk, ctx, "before", locker.Params{TTL: time.Second})
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	le = mustObtain(t, lk, ctx, "after", locker.Params{TTL: time.Second})
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
	}
	if len(names) != 3 {
		t.Fatalf("spans after the global provider was set: %v, want obtain, hold, release", names)
	}
}
