package guard

import (
	"context"
	"testing"

	"github.com/locktag/locktag/internal/obstest"
	"github.com/locktag/locktag/internal/redistest"
	"github.com/locktag/locktag/locker"
)

// The holder's label names the route, the request's trace id (as the
// Locker's Observer reads it) and its request id; Inspect shows it.
func TestLockLabel(t *testing.T) {
	srv := redistest.Start(t)
	lk := lockerOn(t, srv.Pool(t), locker.WithObserver(new(obstest.Recorder)))
	g, err := CompileLock(lk, `key:"lbl:{v.id}"`, sources)
	if err != nil {
		t.Fatal(err)
	}
	const tid = "4bf92f3577b34da6a3ce929d0e0e4736"
	traced := obstest.WithTrace(t.Context(), tid)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"plain", t.Context(), "POST /pay/:id"},
		{"traced", traced, "POST /pay/:id trace=" + tid},
		{"traced with request id", WithRequestID(traced, "r-17"), "POST /pay/:id trace=" + tid + " request=r-17"},
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
	// A Locker without an Observer that reads traces labels no trace.
	if got := requestLabel(traced, lockerOn(t, srv.Pool(t)), "GET /"); got != "GET /" {
		t.Fatalf("label without a trace source %q", got)
	}
	if RequestIDFromContext(WithRequestID(t.Context(), "x")) != "x" || RequestIDFromContext(t.Context()) != "" {
		t.Fatal("RequestIDFromContext")
	}
}
