package interceptor_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"sync/atomic"
	"time"

	"github.com/locktag/locktag/interceptor"
	"github.com/locktag/locktag/interceptor/internal/rpccore/testpb"
	"github.com/locktag/locktag/interceptor/internal/testpbgrpc"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/retry"
	"github.com/locktag/locktag/locker/redigo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// A client that retries Reserve with one idempotency key, against a
// guarded server whose first answer is lost on the way back.
func ExampleIdempotentUnaryClientInterceptor() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	idem, err := interceptor.NewIdempotency(lk, []string{testpbgrpc.Inventory_Reserve_FullMethodName}, guard.WithPublicScope())
	if err != nil {
		log.Fatal(err)
	}
	var calls atomic.Int32
	loseFirst := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if calls.Add(1) == 1 { // the charge ran; its answer is lost
			return nil, status.Error(codes.Unavailable, "connection reset")
		}
		return resp, err
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(loseFirst, idem.Unary()))
	testpbgrpc.RegisterInventoryServer(srv, &charges{})
	lis := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	conn, err := grpc.NewClient("passthrough:///payments",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(interceptor.IdempotentUnaryClientInterceptor(
			retry.New(retry.WithBudget(10*time.Second)),
			testpbgrpc.Inventory_Reserve_FullMethodName,
		)))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := testpbgrpc.NewInventoryClient(conn)

	var header metadata.MD
	resp, err := client.Reserve(context.Background(), &testpb.ReserveRequest{Sku: "book"}, grpc.Header(&header))
	fmt.Println("charge", resp.GetToken(), err, "replayed:", header.Get(interceptor.ReplayedMetadata), "calls:", calls.Load())
	// Output: charge 1 <nil> replayed: [true] calls: 2
}

// A call given up is a *RetryError carrying its idempotency key, and
// keeping the last attempt's code: sent again later with that key, the
// operation runs once — or, if it ran already, its answer is replayed.
func ExampleRetryError() {
	lk, err := locker.New(redigo.New(examplePool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	idem, err := interceptor.NewIdempotency(lk, []string{testpbgrpc.Inventory_Reserve_FullMethodName}, guard.WithPublicScope())
	if err != nil {
		log.Fatal(err)
	}
	var calls atomic.Int32
	downAtFirst := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if calls.Add(1) <= 2 { // down for the first two calls
			return nil, status.Error(codes.Unavailable, "down for maintenance")
		}
		return h(ctx, req)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(downAtFirst, idem.Unary()))
	testpbgrpc.RegisterInventoryServer(srv, &charges{})
	lis := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	conn, err := grpc.NewClient("passthrough:///payments",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(interceptor.IdempotentUnaryClientInterceptor(retry.New(retry.WithMaxAttempts(2)))))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := testpbgrpc.NewInventoryClient(conn)

	_, err = client.Reserve(context.Background(), &testpb.ReserveRequest{Sku: "book"})
	var re *interceptor.RetryError
	if !errors.As(err, &re) {
		log.Fatal(err)
	}
	fmt.Println("gave up:", errors.Is(err, interceptor.ErrBudgetExhausted), re.Attempts, "attempts,", status.Code(err))

	for range 2 { // later: the same operation, with the same key
		ctx := metadata.AppendToOutgoingContext(context.Background(), interceptor.IdempotencyKeyMetadata, re.Key)
		var header metadata.MD
		resp, err := client.Reserve(ctx, &testpb.ReserveRequest{Sku: "book"}, grpc.Header(&header))
		fmt.Println("charge", resp.GetToken(), err, "replayed:", header.Get(interceptor.ReplayedMetadata))
	}
	// Output:
	// gave up: true 2 attempts, Unavailable
	// charge 1 <nil> replayed: []
	// charge 1 <nil> replayed: [true]
}
