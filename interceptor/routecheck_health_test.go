package interceptor

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"testing"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/locktag/locktag/keyexpr"
	"github.com/locktag/locktag/locker/guard"
)

// TestHealthServerMisconfigured: once a lock guard on the Locker has
// found a tag mistake at request time — an HTTP route of the same service
// whose {path.X} its route lacks — the HealthServer answers NOT_SERVING
// for the server and its services, so a rolling deploy stops; before, it
// serves.
func TestHealthServerMisconfigured(t *testing.T) {
	e := newEnv(t)
	hs, err := NewHealthServer(e.lk)
	if err != nil {
		t.Fatal(err)
	}
	check := func() healthpb.HealthCheckResponse_ServingStatus {
		r, err := hs.Check(context.Background(), &healthpb.HealthCheckRequest{Service: "shop.v1.Shop"})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	if st := check(); st != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("before: %v", st)
	}
	// What an HTTP adapter's {path.id} does on a route without :id.
	path := keyexpr.Sources[*http.Request]{"path": func(string) (keyexpr.Getter[*http.Request], error) {
		return func(*http.Request) (string, error) { return "", guard.ErrNoRouteParam }, nil
	}}
	g, err := guard.CompileLock(e.lk, `key:"k:{path.id}"`, path, guard.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if o := g.Run(context.Background(), &http.Request{}, "POST /items/:name", nil); o.Kind != guard.TagMistake || !errors.Is(o.Err, guard.ErrTagMistake) {
		t.Fatalf("%+v", o)
	}
	if st := check(); st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("after the tag mistake: %v, want NOT_SERVING", st)
	}
	l, err := hs.List(context.Background(), &healthpb.HealthListRequest{})
	if err != nil || l.Statuses[""].GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("List: %v %v", l, err)
	}
}
