package interceptor

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/locktag/locktag/locker"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"
)

// TestHealthServerFollowsRedis serves the health service over bufconn and
// watches it follow a real redis-server through stop and restart; Check
// must agree with Watch at every step.
func TestHealthServerFollowsRedis(t *testing.T) {
	e := newEnv(t, locker.WithCallTimeout(500*time.Millisecond))
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer()
	hs, err := NewHealthServer(e.lk, WithWatchInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	healthpb.RegisterHealthServer(s, hs)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	hc := healthpb.NewHealthClient(conn)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	watch, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: "shop.v1.Shop"})
	if err != nil {
		t.Fatal(err)
	}
	next := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		m, err := watch.Recv() // bounded by ctx's deadline
		if err != nil {
			t.Fatalf("Watch: %v (want %v)", err, want)
		}
		if m.Status != want {
			t.Fatalf("Watch sent %v, want %v", m.Status, want)
		}
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != want {
			t.Fatalf("Check = %v after Watch sent %v", r.Status, want)
		}
	}
	next(healthpb.HealthCheckResponse_SERVING)
	e.redis.Stop()
	next(healthpb.HealthCheckResponse_NOT_SERVING)
	e.redis.Restart()
	next(healthpb.HealthCheckResponse_SERVING)
}

// TestHealthOptions: a bad value is a construction error wrapping
// locker.ErrBadOption that names the option; a good one builds.
func TestHealthOptions(t *testing.T) {
	tests := []struct {
		name string
		opt  HealthOption
		want string // "" for a valid option
	}{
		{"timeout", WithHealthTimeout(time.Second), ""},
		{"zero timeout", WithHealthTimeout(0), "WithHealthTimeout(0s)"},
		{"negative timeout", WithHealthTimeout(-time.Second), "WithHealthTimeout(-1s)"},
		{"interval", WithWatchInterval(time.Second), ""},
		{"zero interval", WithWatchInterval(0), "WithWatchInterval(0s)"},
		{"negative interval", WithWatchInterval(-time.Millisecond), "WithWatchInterval(-1ms)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs, err := NewHealthServer(nil, tt.opt)
			if tt.want == "" {
				if err != nil || hs == nil {
					t.Fatalf("NewHealthServer: %v", err)
				}
				return
			}
			if hs != nil || !errors.Is(err, locker.ErrBadOption) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewHealthServer = %v, %v; want ErrBadOption naming %s", hs, err, tt.want)
			}
		})
	}
}
