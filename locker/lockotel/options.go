package lockotel

import (
	"fmt"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/locktag/locktag/locker"
)

// Option configures an Observer.
type Option func(*options)

type options struct {
	tracerProvider trace.TracerProvider // nil: the global one
	meterProvider  metric.MeterProvider // nil: the global one
	errs           []error
}

// evaluateOptions applies opts to the defaults and returns the error of
// the first invalid one.
func evaluateOptions(opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		if opt == nil {
			o.errs = append(o.errs, fmt.Errorf("%w: lockotel: nil Option", locker.ErrBadOption))
			continue
		}
		opt(&o)
	}
	if len(o.errs) > 0 {
		return o, o.errs[0]
	}
	return o, nil
}

// WithTracerProvider sets where spans go. The default is the global
// provider (otel.GetTracerProvider) at the time New is called; tp must not
// be nil (leave the option out for the default).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) {
		if tp == nil {
			o.errs = append(o.errs, fmt.Errorf("%w: lockotel.WithTracerProvider(nil): must not be nil", locker.ErrBadOption))
			return
		}
		o.tracerProvider = tp
	}
}

// WithMeterProvider sets where metrics go. The default is the global
// provider (otel.GetMeterProvider) at the time New is called; mp must not
// be nil (leave the option out for the default).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) {
		if mp == nil {
			o.errs = append(o.errs, fmt.Errorf("%w: lockotel.WithMeterProvider(nil): must not be nil", locker.ErrBadOption))
			return
		}
		o.meterProvider = mp
	}
}
