package interceptor_test

import (
	"context"
	"fmt"
	"log"

	"github.com/locktag/locktag/interceptor"
	"github.com/locktag/locktag/interceptor/internal/rpccore/testpb"
	"github.com/locktag/locktag/interceptor/internal/testpbgrpc"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// charges counts Reserve executions and answers with the count.
type charges struct {
	testpbgrpc.UnimplementedInventoryServer
	n int64
}

func (s *charges) Reserve(ctx context.Context, req *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
	s.n++
	return &testpb.ReserveResponse{Token: s.n}, nil
}

func ExampleNewIdempotency() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()

	// The scope says who the caller is; an authentication interceptor
	// would put it in the context. Here: metadata x-account.
	account := func(ctx context.Context) (string, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get("x-account"); len(v) == 1 {
			return v[0], nil
		}
		return "", nil
	}
	idem, err := interceptor.NewIdempotency(lk,
		[]string{testpbgrpc.Inventory_Reserve_FullMethodName},
		guard.WithScope(account))
	if err != nil {
		log.Fatal(err)
	}
	// The guard goes before any lock interceptor.
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(idem.Unary()))
	testpbgrpc.RegisterInventoryServer(srv, &charges{})
	client, stop := dial(srv)
	defer stop()

	ctx := metadata.AppendToOutgoingContext(context.Background(),
		"x-account", "acct_1", interceptor.IdempotencyKeyMetadata, "order-7-attempt")
	for range 2 {
		var header metadata.MD
		resp, err := client.Reserve(ctx, &testpb.ReserveRequest{Sku: "book"}, grpc.Header(&header))
		fmt.Println(resp.GetToken(), err, header.Get(interceptor.ReplayedMetadata))
	}
	// Output:
	// 1 <nil> []
	// 1 <nil> [true]
}
