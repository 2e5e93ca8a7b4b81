package connectrpc_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/locktag/locktag/interceptor/connectrpc"
	"github.com/locktag/locktag/interceptor/connectrpc/internal/rpccore/testpb"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"github.com/locktag/locktag/locker/redigo"
)

// ExampleIdempotency_WrapUnary runs a procedure once per Idempotency-Key:
// the retry gets the first response back, marked as replayed, and the
// handler does not run again.
func ExampleIdempotency_WrapUnary() {
	lk, err := locker.New(redigo.New(testRedis.NewPool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ig := connectrpc.MustIdempotency(lk, []string{reserve}, guard.WithScope(func(ctx context.Context) (string, error) {
		ci, _ := connect.CallInfoForHandlerContext(ctx)
		return ci.RequestHeader().Get("X-Account"), nil // a real service: the authenticated caller
	}))
	var runs atomic.Int64 // the handler runs on the server's goroutine
	mux := http.NewServeMux()
	mux.Handle(reserve, connect.NewUnaryHandler(reserve, func(ctx context.Context, r *connect.Request[testpb.ReserveRequest]) (*connect.Response[testpb.ReserveResponse], error) {
		return connect.NewResponse(&testpb.ReserveResponse{Token: runs.Add(1)}), nil
	}, connect.WithInterceptors(ig)))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := connect.NewClient[testpb.ReserveRequest, testpb.ReserveResponse](srv.Client(), srv.URL+reserve)
	key := "reserve-" + strconv.FormatInt(time.Now().UnixNano(), 10) // a fresh key per run
	for range 2 {
		req := connect.NewRequest(&testpb.ReserveRequest{Sku: "apple", Qty: 1})
		req.Header().Set(connectrpc.IdempotencyKeyHeader, key)
		req.Header().Set("X-Account", "acct-1")
		resp, err := client.CallUnary(context.Background(), req)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("token", resp.Msg.GetToken(), "replayed:", resp.Header().Get(connectrpc.ReplayedHeader) == "true")
	}
	fmt.Println("handler runs:", runs.Load())
	// Output:
	// token 1 replayed: false
	// token 1 replayed: true
	// handler runs: 1
}
