package main

import (
	"context"
	"errors"
	"io"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/lockotel"
)

// setupTelemetry returns locker options that send locktag's spans and metrics
// to w with the OpenTelemetry stdout exporters: spans as one JSON object each
// when they end (in batches), metrics every interval. A real service
// passes its OTLP (or Prometheus) providers the same way, or sets the global
// providers, which lockotel.New uses by default. shutdown flushes and stops
// both.
func setupTelemetry(w io.Writer, interval time.Duration) (opts []locker.Option, shutdown func(context.Context) error, err error) {
	spanExp, err := stdouttrace.New(stdouttrace.WithWriter(w))
	if err != nil {
		return nil, nil, err
	}
	metricExp, err := stdoutmetric.New(stdoutmetric.WithWriter(w))
	if err != nil {
		return nil, nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spanExp, sdktrace.WithBatchTimeout(time.Second)))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(
		sdkmetric.NewPeriodicReader(metricExp, sdkmetric.WithInterval(interval))))
	shutdown = func(ctx context.Context) error {
		return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx))
	}
	return []locker.Option{locker.WithObserver(lockotel.New(lockotel.WithTracerProvider(tp), lockotel.WithMeterProvider(mp)))}, shutdown, nil
}
