package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// The app's /healthz and grpc.health.v1 both follow a real Redis through
// stop and restart.
func TestHealthEndpointsFollowRedis(t *testing.T) {
	srv, lk := realRedis(t)
	s := newShop(lk, newStore(time.Millisecond, seedStock))
	h, err := newHTTPHandler(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := newGRPCServer(s)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = gs.Serve(ln); close(done) }()
	conn := dialGRPC(t, ln.Addr().String())
	t.Cleanup(func() { _ = conn.Close(); gs.Stop(); <-done })
	hc := healthpb.NewHealthClient(conn)
	ctx := testCtx(t)

	both := func(code int, st healthpb.HealthCheckResponse_ServingStatus) func() bool {
		return func() bool {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
			r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
			return rec.Code == code && err == nil && r.GetStatus() == st
		}
	}
	eventually(t, 10*time.Second, "serving", both(http.StatusOK, healthpb.HealthCheckResponse_SERVING))
	srv.Stop()
	eventually(t, 10*time.Second, "not serving while Redis is down",
		both(http.StatusServiceUnavailable, healthpb.HealthCheckResponse_NOT_SERVING))
	srv.Restart()
	eventually(t, 10*time.Second, "serving again", both(http.StatusOK, healthpb.HealthCheckResponse_SERVING))
}
