package connectrpc_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"

	"github.com/locktag/locktag/interceptor/connectrpc"
	"github.com/locktag/locktag/interceptor/connectrpc/internal/rpccore/testpb"
	"github.com/locktag/locktag/internal/conformance"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
)

// connectDriver plugs connect-go into the transport conformance table.
// Reserve's sku is the key value, its ref the idempotency payload, header
// X-Scope the scope; connect.WithRecover turns a panic into CodeInternal.
type connectDriver struct{}

func (connectDriver) serve(t testing.TB, h conformance.Handler, ics ...connect.Interceptor) conformance.Client {
	mux := http.NewServeMux()
	mux.Handle(reserve, connect.NewUnaryHandler(reserve, func(ctx context.Context, _ *connect.Request[testpb.ReserveRequest]) (*connect.Response[testpb.ReserveResponse], error) {
		n, err := h(ctx)
		if err != nil {
			return nil, err
		}
		return connect.NewResponse(&testpb.ReserveResponse{Token: n}), nil
	}, connect.WithRecover(func(context.Context, connect.Spec, http.Header, any) error {
		return connect.NewError(connect.CodeInternal, errors.New("panic"))
	}), connect.WithInterceptors(ics...)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	client := connect.NewClient[testpb.ReserveRequest, testpb.ReserveResponse](srv.Client(), srv.URL+reserve)
	return func(ctx context.Context, r conformance.Request) conformance.Result {
		req := connect.NewRequest(&testpb.ReserveRequest{Sku: r.Key, Ref: []byte(r.Body)})
		if r.IdemKey != "" {
			req.Header().Set(connectrpc.IdempotencyKeyHeader, r.IdemKey)
			req.Header().Set("X-Scope", r.Scope)
		}
		resp, err := client.CallUnary(ctx, req)
		if err == nil {
			body, _ := proto.MarshalOptions{Deterministic: true}.Marshal(resp.Msg)
			return conformance.ClassifyRPC(0, "", false, resp.Header().Get(connectrpc.ReplayedHeader) == "true", body, "ok")
		}
		reason, retry, quota, delay := "", false, false, time.Duration(0)
		if ce := new(connect.Error); errors.As(err, &ce) {
			for _, d := range ce.Details() {
				switch v, _ := d.Value(); v := v.(type) {
				case *errdetails.ErrorInfo:
					reason = v.GetReason()
				case *errdetails.RetryInfo:
					retry, delay = true, v.GetRetryDelay().AsDuration()
				case *errdetails.QuotaFailure:
					quota = len(v.GetViolations()) > 0
				}
			}
		}
		res := conformance.ClassifyRPC(uint32(connect.CodeOf(err)), reason, retry, false, nil, err.Error())
		res.RetryIn, res.Quota = delay, quota
		return res
	}
}

func (d connectDriver) Lock(t testing.TB, lk *locker.Locker, tag string, h conformance.Handler) conformance.Client {
	ic, err := connectrpc.New(lk, connectrpc.Rules{reserve: fmt.Sprintf(tag, "{req.sku}")})
	if err != nil {
		t.Fatal(err)
	}
	return d.serve(t, h, ic)
}

func (d connectDriver) Chain(t testing.TB, lk *locker.Locker, tags []string, h conformance.Handler) conformance.Client {
	ics := make([]connect.Interceptor, len(tags))
	for i, tag := range tags {
		ic, err := connectrpc.New(lk, connectrpc.Rules{reserve: fmt.Sprintf(tag, "{req.sku}")})
		if err != nil {
			t.Fatal(err)
		}
		ics[i] = ic
	}
	return d.serve(t, h, ics...)
}

func (d connectDriver) Idempotency(t testing.TB, lk *locker.Locker, h conformance.Handler) conformance.Client {
	ig, err := connectrpc.NewIdempotency(lk, []string{reserve}, guard.WithScope(func(ctx context.Context) (string, error) {
		if ci, ok := connect.CallInfoForHandlerContext(ctx); ok {
			return ci.RequestHeader().Get("X-Scope"), nil
		}
		return "", nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return d.serve(t, h, ig)
}

func TestConformance(t *testing.T) { conformance.Run(t, connectDriver{}) }
