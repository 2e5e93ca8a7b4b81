package connectrpc_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"connectrpc.com/connect"

	"github.com/locktag/locktag/interceptor/connectrpc"
	"github.com/locktag/locktag/interceptor/connectrpc/internal/rpccore/testpb"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/redigo"
)

// ExampleNew locks a connect procedure by a request field; a second call
// for the same sku while the first holds the lock is refused with
// CodeAborted and a retry hint.
func ExampleNew() {
	lk, err := locker.New(redigo.New(testRedis.NewPool()))
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()
	ic := connectrpc.MustNew(lk, connectrpc.Rules{reserve: `key:"sku:{req.sku}"`})
	var client *connect.Client[testpb.ReserveRequest, testpb.ReserveResponse]
	mux := http.NewServeMux()
	mux.Handle(reserve, connect.NewUnaryHandler(reserve, func(ctx context.Context, r *connect.Request[testpb.ReserveRequest]) (*connect.Response[testpb.ReserveResponse], error) {
		fmt.Println("holding", locker.FromContext(ctx).Key())
		_, err := client.CallUnary(context.Background(), connect.NewRequest(r.Msg)) // the same sku, meanwhile
		fmt.Println(connect.CodeOf(err), connectrpc.RetryDelay(err))
		return connect.NewResponse(&testpb.ReserveResponse{}), nil
	}, connect.WithInterceptors(ic)))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client = connect.NewClient[testpb.ReserveRequest, testpb.ReserveResponse](srv.Client(), srv.URL+reserve)
	_, err = client.CallUnary(context.Background(), connect.NewRequest(&testpb.ReserveRequest{Sku: "apple"}))
	fmt.Println(err)
	// Output:
	// holding sku:apple
	// aborted 1s
	// <nil>
}
