package interceptor_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/locktag/locktag/interceptor"
	"github.com/locktag/locktag/interceptor/internal/rpccore/testpb"
	"github.com/locktag/locktag/interceptor/internal/testpbgrpc"
	"github.com/locktag/locktag/internal/conformance"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
)

// grpcDriver plugs gRPC into the transport conformance table. Reserve's
// sku is the key value, its ref the idempotency payload; metadata
// "x-scope" the scope. gRPC has no panic handling of its own, so the
// server installs the usual recovery interceptor (outermost): a panic is
// codes.Internal.
type grpcDriver struct{}

type confServer struct {
	testpbgrpc.UnimplementedInventoryServer
	h conformance.Handler
}

func (s confServer) Reserve(ctx context.Context, _ *testpb.ReserveRequest) (*testpb.ReserveResponse, error) {
	n, err := s.h(ctx)
	if err != nil {
		return nil, err
	}
	return &testpb.ReserveResponse{Token: n}, nil
}

func recoverUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = status.Errorf(codes.Internal, "panic: %v", p)
		}
	}()
	return next(ctx, req)
}

func (grpcDriver) serve(t testing.TB, h conformance.Handler, guards ...grpc.UnaryServerInterceptor) conformance.Client {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.ChainUnaryInterceptor(append([]grpc.UnaryServerInterceptor{recoverUnary}, guards...)...))
	testpbgrpc.RegisterInventoryServer(s, confServer{h: h})
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	client := testpbgrpc.NewInventoryClient(cc)
	return func(ctx context.Context, r conformance.Request) conformance.Result {
		if r.IdemKey != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, interceptor.IdempotencyKeyMetadata, r.IdemKey, "x-scope", r.Scope)
		}
		var header metadata.MD
		resp, err := client.Reserve(ctx, &testpb.ReserveRequest{Sku: r.Key, Ref: []byte(r.Body)}, grpc.Header(&header))
		var body []byte
		if err == nil {
			body, _ = proto.MarshalOptions{Deterministic: true}.Marshal(resp)
		}
		st := status.Convert(err)
		reason, retry, quota, delay := "", false, false, time.Duration(0)
		for _, d := range st.Details() {
			switch d := d.(type) {
			case *errdetails.ErrorInfo:
				reason = d.GetReason()
			case *errdetails.RetryInfo:
				retry, delay = true, d.GetRetryDelay().AsDuration()
			case *errdetails.QuotaFailure:
				quota = len(d.GetViolations()) > 0
			}
		}
		replayed := len(header.Get(interceptor.ReplayedMetadata)) > 0
		res := conformance.ClassifyRPC(uint32(st.Code()), reason, retry, replayed, body, st.String())
		res.RetryIn, res.Quota = delay, quota
		return res
	}
}

func (d grpcDriver) Lock(t testing.TB, lk *locker.Locker, tag string, h conformance.Handler) conformance.Client {
	ic, err := interceptor.New(lk, interceptor.Rules{testpbgrpc.Inventory_Reserve_FullMethodName: fmt.Sprintf(tag, "{req.sku}")})
	if err != nil {
		t.Fatal(err)
	}
	return d.serve(t, h, ic.Unary())
}

func (d grpcDriver) Chain(t testing.TB, lk *locker.Locker, tags []string, h conformance.Handler) conformance.Client {
	ics := make([]grpc.UnaryServerInterceptor, len(tags))
	for i, tag := range tags {
		ic, err := interceptor.New(lk, interceptor.Rules{testpbgrpc.Inventory_Reserve_FullMethodName: fmt.Sprintf(tag, "{req.sku}")})
		if err != nil {
			t.Fatal(err)
		}
		ics[i] = ic.Unary()
	}
	return d.serve(t, h, ics...)
}

func (d grpcDriver) Idempotency(t testing.TB, lk *locker.Locker, h conformance.Handler) conformance.Client {
	ig, err := interceptor.NewIdempotency(lk, []string{testpbgrpc.Inventory_Reserve_FullMethodName}, guard.WithScope(func(ctx context.Context) (string, error) {
		if v := metadata.ValueFromIncomingContext(ctx, "x-scope"); len(v) > 0 {
			return v[0], nil
		}
		return "", nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return d.serve(t, h, ig.Unary())
}

func TestConformance(t *testing.T) { conformance.Run(t, grpcDriver{}) }
