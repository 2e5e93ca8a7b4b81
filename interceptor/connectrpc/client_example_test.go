package connectrpc_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/locktag/locktag/interceptor/connectrpc"
	"github.com/locktag/locktag/interceptor/connectrpc/internal/rpccore/testpb"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/guard/retry"
	"github.com/locktag/locktag/locker/redigo"
)

// A client that retries Reserve with one Idempotency-Key, against a
// guarded server whose first answer is lost on the way back.
func ExampleNewIdempotentClient() {
	lk, err := locker.New(redigo.New(testRedis.NewPool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	const procedure = "/locktag.test.v1.Inventory/Reserve"
	idem := connectrpc.MustIdempotency(lk, []string{procedure}, guard.WithPublicScope())
	var calls, charges atomic.Int64
	loseFirst := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			resp, err := next(ctx, req)
			if calls.Add(1) == 1 { // the charge ran; its answer is lost
				return nil, connect.NewError(connect.CodeUnavailable, errors.New("connection reset"))
			}
			return resp, err
		}
	})
	charge := func(ctx context.Context, r *connect.Request[testpb.ReserveRequest]) (*connect.Response[testpb.ReserveResponse], error) {
		return connect.NewResponse(&testpb.ReserveResponse{Token: charges.Add(1)}), nil
	}
	mux := http.NewServeMux()
	mux.Handle(procedure, connect.NewUnaryHandler(procedure, charge, connect.WithInterceptors(loseFirst, idem)))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	client := connect.NewClient[testpb.ReserveRequest, testpb.ReserveResponse](srv.Client(), srv.URL+procedure,
		connect.WithInterceptors(connectrpc.NewIdempotentClient(retry.New(retry.WithBudget(10*time.Second)), procedure)))
	resp, err := client.CallUnary(context.Background(), connect.NewRequest(&testpb.ReserveRequest{Sku: "book"}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("charge", resp.Msg.GetToken(), "replayed:", resp.Header().Get(connectrpc.ReplayedHeader), "calls:", calls.Load())
	// Output: charge 1 replayed: true calls: 2
}

// A call given up is a *RetryError carrying its idempotency key, and
// keeping the last attempt's code: sent again later with that key, the
// operation runs once — or, if it ran already, its answer is replayed.
func ExampleRetryError() {
	lk, err := locker.New(redigo.New(testRedis.NewPool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	const procedure = "/locktag.test.v1.Inventory/Reserve"
	idem := connectrpc.MustIdempotency(lk, []string{procedure}, guard.WithPublicScope())
	var calls, charges atomic.Int64
	downAtFirst := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if calls.Add(1) <= 2 { // down for the first two calls
				return nil, connect.NewError(connect.CodeUnavailable, errors.New("down for maintenance"))
			}
			return next(ctx, req)
		}
	})
	charge := func(ctx context.Context, r *connect.Request[testpb.ReserveRequest]) (*connect.Response[testpb.ReserveResponse], error) {
		return connect.NewResponse(&testpb.ReserveResponse{Token: charges.Add(1)}), nil
	}
	mux := http.NewServeMux()
	mux.Handle(procedure, connect.NewUnaryHandler(procedure, charge, connect.WithInterceptors(downAtFirst, idem)))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := connect.NewClient[testpb.ReserveRequest, testpb.ReserveResponse](srv.Client(), srv.URL+procedure,
		connect.WithInterceptors(connectrpc.NewIdempotentClient(retry.New(retry.WithMaxAttempts(2)), procedure)))

	_, err = client.CallUnary(context.Background(), connect.NewRequest(&testpb.ReserveRequest{Sku: "book"}))
	var re *connectrpc.RetryError
	if !errors.As(err, &re) {
		log.Fatal(err)
	}
	fmt.Println("gave up:", errors.Is(err, connectrpc.ErrBudgetExhausted), re.Attempts, "attempts,", connect.CodeOf(err))

	for range 2 { // later: the same operation, with the same key
		req := connect.NewRequest(&testpb.ReserveRequest{Sku: "book"})
		req.Header().Set(connectrpc.IdempotencyKeyHeader, re.Key)
		resp, err := client.CallUnary(context.Background(), req)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("charge", resp.Msg.GetToken(), "replayed:", resp.Header().Get(connectrpc.ReplayedHeader) == "true")
	}
	// Output:
	// gave up: true 2 attempts, unavailable
	// charge 1 replayed: false
	// charge 1 replayed: true
}
