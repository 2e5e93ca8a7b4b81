package interceptor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/job"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// HealthOption changes a HealthServer. An invalid value makes
// NewHealthServer return an error wrapping locker.ErrBadOption that names
// the option.
type HealthOption func(*healthOptions)

type healthOptions struct {
	timeout, every time.Duration
	leaders        map[string]*job.Elector // service name → its Elector
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

// WithLeader makes the service name service follow el instead of Redis:
// SERVING only while el leads (job.Elector.IsLeader), NOT_SERVING otherwise,
// so that a readiness probe on that name routes to the leader only. Check
// asks el and makes no Redis call; Watch sends each change of leadership as
// it happens (job.Elector.Changed). service must not be empty and may be
// given once; el must not be nil. By default no name follows an Elector.
// Leader-aware readiness: docs/operations.md#leader-aware-readiness.
func WithLeader(service string, el *job.Elector) HealthOption {
	return func(o *healthOptions) {
		switch _, dup := o.leaders[service]; {
		case service == "":
			o.errs = append(o.errs, fmt.Errorf("%w: interceptor.WithLeader(%q): empty service name", locker.ErrBadOption, service))
		case el == nil:
			o.errs = append(o.errs, fmt.Errorf("%w: interceptor.WithLeader(%q): nil Elector", locker.ErrBadOption, service))
		case dup:
			o.errs = append(o.errs, fmt.Errorf("%w: interceptor.WithLeader(%q): service given twice", locker.ErrBadOption, service))
		default:
			if o.leaders == nil {
				o.leaders = make(map[string]*job.Elector)
			}
			o.leaders[service] = el
		}
	}
}

// HealthServer is a grpc.health.v1 Health service whose status follows
// (*locker.Locker).Healthy: SERVING while Redis answers, NOT_SERVING when it
// does not, and NOT_SERVING until restart from the first request a lock
// guard refused for a mistake in its tag within guard.MistakeWindow of the
// process's start (guard.ReasonMisconfigured). Every service name gets that
// answer but those given WithLeader. Each change is logged with its reason.
// Register it in place of grpc/health's server; the answers and options:
// docs/operations.md#health-checks.
type HealthServer struct {
	healthpb.UnimplementedHealthServer
	check *guard.Health
	every time.Duration
	// leaders are WithLeader's, read-only; behind a pointer so that a
	// HealthServer stays comparable, as it was before it had them.
	leaders *map[string]*job.Elector
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
	return &HealthServer{check: guard.NewHealth(lk, o.timeout, nil), every: o.every, leaders: &o.leaders}, nil
}

// status runs one check.
func (s *HealthServer) status(ctx context.Context) healthpb.HealthCheckResponse_ServingStatus {
	if s.check.Check(ctx) != "" {
		return healthpb.HealthCheckResponse_NOT_SERVING
	}
	return healthpb.HealthCheckResponse_SERVING
}

// leaderStatus is the status of a WithLeader name.
func leaderStatus(el *job.Elector) healthpb.HealthCheckResponse_ServingStatus {
	if el.IsLeader() {
		return healthpb.HealthCheckResponse_SERVING
	}
	return healthpb.HealthCheckResponse_NOT_SERVING
}

// Check runs one check, bounded by the call's deadline and
// WithHealthTimeout; for a WithLeader name it asks the Elector.
func (s *HealthServer) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if el, ok := s.leader(req.GetService()); ok {
		return &healthpb.HealthCheckResponse{Status: leaderStatus(el)}, nil
	}
	return &healthpb.HealthCheckResponse{Status: s.status(ctx)}, nil
}

// List reports the status under the name "" (the server as a whole), and
// each WithLeader name's.
func (s *HealthServer) List(ctx context.Context, _ *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	out := map[string]*healthpb.HealthCheckResponse{"": {Status: s.status(ctx)}}
	for name, el := range s.leaderNames() {
		out[name] = &healthpb.HealthCheckResponse{Status: leaderStatus(el)}
	}
	return &healthpb.HealthListResponse{Statuses: out}, nil
}

// Watch sends the status at once, then re-checks every WithWatchInterval
// and sends it again whenever it changed, until the client goes away. On
// a WithLeader name it sends each change of leadership as it happens.
func (s *HealthServer) Watch(req *healthpb.HealthCheckRequest, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	if el, ok := s.leader(req.GetService()); ok {
		return watchLeader(el, stream)
	}
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

// watchLeader is Watch on a WithLeader name: the channel is taken before
// the status is read, so that no change between the two is missed.
func watchLeader(el *job.Elector, stream grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	ctx := stream.Context()
	last := healthpb.HealthCheckResponse_SERVICE_UNKNOWN
	for {
		changed := el.Changed()
		if st := leaderStatus(el); st != last {
			if err := stream.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			last = st
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// leader returns the Elector WithLeader gave for service, if any.
func (s *HealthServer) leader(service string) (*job.Elector, bool) {
	el, ok := s.leaderNames()[service]
	return el, ok
}

// leaderNames are the WithLeader names with their Electors (none for a
// HealthServer not made by NewHealthServer).
func (s *HealthServer) leaderNames() map[string]*job.Elector {
	if s.leaders == nil {
		return nil
	}
	return *s.leaders
}
