package guard

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

type requestIDKey struct{}

// WithRequestID returns a context that carries the request's id (an
// adapter's or the application's, e.g. an X-Request-Id header), which lock
// guards add to the holder's label (see Lock.Run). Untrusted input is
// fine: labels are cut to locker.MaxLabel bytes.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestIDFromContext returns the id WithRequestID put in ctx, or "".
func RequestIDFromContext(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// requestLabel describes a request for operators (locker.Params.Label):
// name (the route, the full method, or the tag's name), then "trace=<id>"
// when ctx carries a valid span context and "request=<id>" when it carries
// a request id, e.g. "POST /orders/:id/pay trace=4bf92f35...".
func requestLabel(ctx context.Context, name string) string {
	sc := trace.SpanContextFromContext(ctx)
	rid := RequestIDFromContext(ctx)
	if !sc.IsValid() && rid == "" {
		return name
	}
	var b strings.Builder
	b.WriteString(name)
	if sc.IsValid() {
		b.WriteString(" trace=")
		b.WriteString(sc.TraceID().String())
	}
	if rid != "" {
		b.WriteString(" request=")
		b.WriteString(rid)
	}
	return b.String()
}
