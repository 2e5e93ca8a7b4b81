package examples_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"connectrpc.com/connect"
	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/locktag/locktag/interceptor/connectrpc"
	"github.com/locktag/locktag/locker/locktest"
)

// A connect procedure behind connectrpc.MustNew, in the lock's states.
// In a test, t is the test's *testing.T.
func Example_connect() {
	var t locktest.Standalone
	defer t.Close()
	k := locktest.New(&t)
	const (
		check = "/grpc.health.v1.Health/Check"
		tag   = `key:"svc:{req.service}"`
	)
	type (
		req  = grpc_health_v1.HealthCheckRequest
		resp = grpc_health_v1.HealthCheckResponse
	)
	var started chan struct{} // set: the call blocks until its lease is lost
	mux := http.NewServeMux()
	mux.Handle(check, connect.NewUnaryHandler(check,
		func(ctx context.Context, _ *connect.Request[req]) (*connect.Response[resp], error) {
			if started != nil {
				close(started)
				<-ctx.Done()
				return nil, context.Cause(ctx)
			}
			return connect.NewResponse(&resp{Status: grpc_health_v1.HealthCheckResponse_SERVING}), nil
		},
		connect.WithInterceptors(connectrpc.MustNew(k.Locker(), connectrpc.Rules{check: tag}))))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := connect.NewClient[req, resp](srv.Client(), srv.URL+check)
	call := func() string {
		_, err := client.CallUnary(context.Background(), connect.NewRequest(&req{Service: "shop"}))
		if err == nil {
			return "ok"
		}
		return connect.CodeOf(err).String()
	}
	key := k.Key(tag, locktest.Values{"req.service": "shop"})

	release := k.Hold(key)
	fmt.Println("held elsewhere:", call())
	release()
	fmt.Println("released:", call())

	k.Down()
	fmt.Println("Redis down:", call())
	k.Up()

	started = make(chan struct{})
	done := make(chan string)
	go func() { done <- call() }()
	<-started
	k.Lose(key)
	fmt.Println("lease lost:", <-done)
	// Output:
	// held elsewhere: aborted
	// released: ok
	// Redis down: unavailable
	// lease lost: aborted
}
