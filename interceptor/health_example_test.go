package interceptor_test

import (
	"context"
	"fmt"
	"log"

	"github.com/locktag/locktag/interceptor"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/job"
	"github.com/locktag/locktag/locker/redigo"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// The health service answers "locktag.leader" from an Elector: SERVING on
// the leader only, for a readiness probe that routes to it. The other
// names follow Redis.
func ExampleWithLeader() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	el, err := job.NewElector(lk, "leader:billing")
	if err != nil {
		log.Fatal(err)
	}
	hs, err := interceptor.NewHealthServer(lk, interceptor.WithLeader("locktag.leader", el))
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	defer srv.Stop()

	ctx := context.Background()
	check := func(service string) {
		resp, _ := hs.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		fmt.Printf("%q: %v\n", service, resp.Status)
	}
	check("")
	check("locktag.leader")
	term, err := el.Campaign(ctx) // usually: go el.Run(ctx, lead)
	if err != nil {
		log.Fatal(err)
	}
	check("locktag.leader")
	_ = term.Resign(ctx)
	check("locktag.leader")
	// Output:
	// "": SERVING
	// "locktag.leader": NOT_SERVING
	// "locktag.leader": SERVING
	// "locktag.leader": NOT_SERVING
}
