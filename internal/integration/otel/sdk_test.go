package otel_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/lockotel"
)

// TestSDKAllocations holds the uncontended lock+unlock to its allocation
// budget with the OpenTelemetry SDK recording every span and metric.
func TestSDKAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	srv := redistest.Start(t)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	lk := newLocker(t, srv, locker.WithObserver(lockotel.New(lockotel.WithTracerProvider(tp), lockotel.WithMeterProvider(mp))))
	ctx := context.Background()
	p := locker.Params{TTL: 10 * time.Second, Wait: time.Minute, Name: "allocs"}
	const budget = 25
	var failed error
	n := testing.AllocsPerRun(200, func() {
		le, err := lk.Obtain(ctx, "allocs", p)
		if err != nil {
			failed = err
			return
		}
		if err := le.Release(ctx); err != nil {
			failed = err
		}
	})
	if failed != nil {
		t.Fatal(failed)
	}
	t.Logf("%v allocations per lock+unlock (budget %v)", n, budget)
	if n > budget {
		t.Errorf("%v allocations per lock+unlock, budget %v", n, budget)
	}
}

// BenchmarkTelemetry: the same uncontended lock+unlock without an
// Observer, with lockotel on the global providers still unset (no-op), and
// with lockotel and the OpenTelemetry SDK recording every span and metric,
// in one run.
func BenchmarkTelemetry(b *testing.B) {
	srv := redistest.Start(b)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	for _, tc := range []struct {
		name string
		opts []locker.Option
	}{
		{"none", nil},
		{"unset", []locker.Option{locker.WithObserver(lockotel.New())}},
		{"sdk", []locker.Option{locker.WithObserver(lockotel.New(lockotel.WithTracerProvider(tp), lockotel.WithMeterProvider(mp)))}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			lk := newLocker(b, srv, tc.opts...)
			ctx := context.Background()
			p := locker.Params{TTL: 10 * time.Second, Name: "bench"}
			b.ReportAllocs()
			for b.Loop() {
				le, err := lk.Obtain(ctx, "t", p)
				if err != nil {
					b.Fatal(err)
				}
				_ = le.Release(ctx)
			}
		})
	}
}
