package examples_test

import (
	"context"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/locktag/locktag/interceptor"
	"github.com/locktag/locktag/locker/locktest"
)

// checker is the service under test: the gRPC health service's Check,
// locked by the service it names.
type checker struct {
	grpc_health_v1.UnimplementedHealthServer
	started chan struct{} // closed when a call starts; nil: do not block
}

func (c *checker) Check(ctx context.Context, r *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	if c.started != nil {
		close(c.started)
		<-ctx.Done() // until the lease is lost
		return nil, context.Cause(ctx)
	}
	return &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}, nil
}

// A gRPC method behind interceptor.UnaryServerInterceptor, served over
// bufconn, in the lock's states: held elsewhere, Redis down, a rate used
// up, the lease lost. In a test, t is the test's *testing.T.
func Example_grpc() {
	var t locktest.Standalone
	defer t.Close()
	k := locktest.New(&t)
	const (
		check   = "/grpc.health.v1.Health/Check"
		list    = "/grpc.health.v1.Health/List"
		tag     = `key:"svc:{req.service}"`
		rateTag = `key:"list" rate:"5/1m"`
	)
	svc := &checker{}
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpc.UnaryInterceptor(interceptor.UnaryServerInterceptor(k.Locker(),
		interceptor.Rules{check: tag, list: rateTag})))
	grpc_health_v1.RegisterHealthServer(srv, svc)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	client := grpc_health_v1.NewHealthClient(conn)
	call := func() string {
		_, err := client.Check(context.Background(), &grpc_health_v1.HealthCheckRequest{Service: "shop"})
		return status.Code(err).String()
	}
	key := k.Key(tag, locktest.Values{"req.service": "shop"})

	release := k.Hold(key)
	fmt.Println("held elsewhere:", call())
	release()
	fmt.Println("released:", call())

	k.Down()
	fmt.Println("Redis down:", call())
	k.Up()

	k.ExhaustRate(rateTag, nil)
	_, err = client.List(context.Background(), &grpc_health_v1.HealthListRequest{})
	fmt.Println("rate used up:", status.Code(err))

	svc.started = make(chan struct{})
	done := make(chan string)
	go func() { done <- call() }()
	<-svc.started
	k.Lose(key)
	fmt.Println("lease lost:", <-done)
	// Output:
	// held elsewhere: Aborted
	// released: OK
	// Redis down: Unavailable
	// rate used up: ResourceExhausted
	// lease lost: Aborted
}
