package guard

import (
	"context"
	"strings"

	"github.com/locktag/locktag/locker"
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
// when lk's Observer finds a trace in ctx (locker.Locker.TraceID: with
// lockotel, a valid span context) and "request=<id>" when ctx carries a
// request id, e.g. "POST /orders/:id/pay trace=4bf92f35...".
func requestLabel(ctx context.Context, lk *locker.Locker, name string) string {
	tid := lk.TraceID(ctx)
	rid := RequestIDFromContext(ctx)
	if tid == "" && rid == "" {
		return name
	}
	var b strings.Builder
	b.WriteString(name)
	if tid != "" {
		b.WriteString(" trace=")
		b.WriteString(tid)
	}
	if rid != "" {
		b.WriteString(" request=")
		b.WriteString(rid)
	}
	return b.String()
}
