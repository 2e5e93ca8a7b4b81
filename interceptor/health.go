package interceptor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// HealthOption changes a HealthServer. An invalid value makes
// NewHealthServer return an error wrapping locker.ErrBadOption that names
// the option.
type HealthOption func(*healthOptions)

type healthOptions struct {
	timeout, every time.Duration
	errs           []error
}

func (o *healthOptions) bad(option string, d time.Duration) {
	o.errs = append(o.errs, fmt.Errorf("%w: interceptor.%s(%v): must be positive", locker.ErrBadOption, option, d))
}

// WithHealthTimeout bounds each check (one trivial script per Redis node);
// a node slower than d counts as down. d must be positive. The default is
// 2s.
func WithHealthTimeout(d time.Duration) HealthOption {
	return func(o *healthOptions) {
		if d <= 0 {
			o.bad("WithHealthTimeout", d)
			return
		}
		o.timeout = d
	}
}

// WithWatchInterval sets how often a Watch stream re-checks Redis; it
// sends a message only when the status changes. d must be positive. The
// default is 5s.
func WithWatchInterval(d time.Duration) HealthOption {
	return func(o *healthOptions) {
		if d <= 0 {
			o.bad("WithWatchInterval", d)
			return
		}
		o.every = d
	}
}

// HealthServer is a grpc.health.v1 Health service whose status follows
// Redis reachability through (*locker.Locker).Healthy: SERVING when every
// node of a Locker from locker.New answers (a majority of masters for
// locker.NewRedlock), NOT_SERVING otherwise. Redis is what every locked
// method needs, so it answers the same for every service name (including
// "", the server as a whole). Each time the status changes it is logged
// with its reason and the Redis error (guard.Health; a Redis user without
// the rights locktag needs says so). Register it in place of grpc/health's
// server:
//
//	hs, err := interceptor.NewHealthServer(lk)
//	...
//	healthpb.RegisterHealthServer(srv, hs)
type HealthServer struct {
	healthpb.UnimplementedHealthServer
	check *guard.Health
	every time.Duration
}

// NewHealthServer returns a HealthServer on lk. The error wraps
// locker.ErrBadOption, naming each invalid option.
func NewHealthServer(lk *locker.Locker, opts ...HealthOption) (*HealthServer, error) {
	o := healthOptions{timeout: 2 * time.Second, every: 5 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if err := errors.Join(o.errs...); err != nil {
		return nil, err
	}
	return &HealthServer{check: guard.NewHealth(lk, o.timeout, nil), every: o.every}, nil
}

// status runs one check.
func (s *HealthServer) status(ctx context.Context) healthpb.HealthCheckResponse_ServingStatus {
	if s.check.Check(ctx) != "" {
		return healthpb.HealthCheckResponse_NOT_SERVING
	}
	return healthpb.HealthCheckResponse_SERVING
}

// Check runs one check, bounded by the call's deadline and
// WithHealthTimeout.
func (s *HealthServer) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return &healthpb.HealthCheckResponse{Status: s.status(ctx)}, nil
}

// List reports the one status under the name "" (the server as a whole).
func (s *HealthServer) List(ctx context.Context, _ *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	return &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{
		"": {Status: s.status(ctx)},
	}}, nil
}

// Watch sends the status at once, then re-checks every WithWatchInterval
// and sends it again whenever it changed, until the client goes away.
func (s *HealthServer) Watch(_ *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	ctx := stream.Context()
	t := time.NewTicker(s.every)
	defer t.Stop()
	last := healthpb.HealthCheckResponse_SERVICE_UNKNOWN
	for {
		if st := s.status(ctx); st != last && ctx.Err() == nil {
			if err := stream.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			last = st
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
