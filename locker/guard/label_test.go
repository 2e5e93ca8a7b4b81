package guard

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// The holder's label names the route, the request's trace id (from a
// valid span context) and its request id; Inspect shows it.
func TestLockLabel(t *testing.T) {
	lk := newLocker(t)
	g, err := CompileLock(lk, `key:"lbl:{v.id}"`, sources)
	if err != nil {
		t.Fatal(err)
	}
	tid := trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled})
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"plain", t.Context(), "POST /pay/:id"},
		{"traced", trace.ContextWithSpanContext(t.Context(), sc), "POST /pay/:id trace=" + tid.String()},
		{"traced with request id", WithRequestID(trace.ContextWithSpanContext(t.Context(), sc), "r-17"), "POST /pay/:id trace=" + tid.String() + " request=r-17"},
		{"request id", WithRequestID(t.Context(), "r-18"), "POST /pay/:id request=r-18"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var label string
			o := g.Run(tc.ctx, req{"id": "1"}, "POST /pay/:id", func(ctx context.Context) error {
				st, err := lk.Inspect(ctx, "lbl:1")
				if err != nil {
					return err
				}
				if st.Holder != nil {
					label = st.Holder.Label
				}
				return nil
			})
			if o.Kind != OK || o.Err != nil {
				t.Fatalf("outcome %+v", o)
			}
			if label != tc.want {
				t.Fatalf("label %q, want %q", label, tc.want)
			}
		})
	}
	if RequestIDFromContext(WithRequestID(t.Context(), "x")) != "x" || RequestIDFromContext(t.Context()) != "" {
		t.Fatal("RequestIDFromContext")
	}
}
