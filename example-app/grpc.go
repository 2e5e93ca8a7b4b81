package main

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/locktag/locktag/example-app/shopv1"
	"github.com/locktag/locktag/interceptor"
	"github.com/locktag/locktag/locker"
)

// newGRPCServer returns the shop's gRPC server. Its lock rules come from the
// .proto alone: shop.v1.Shop/Buy carries option (locktag.v1.lock), which
// interceptor.New reads from the generated descriptor, so no Go rule is
// given here. A typo in that option would fail here, at start-up.
func newGRPCServer(s *shop) (*grpc.Server, error) {
	ic, err := interceptor.New(s.lk, nil) // nil: no Go rules, only proto options
	if err != nil {
		return nil, err // a bad option fails here, at start-up
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(ic.Unary()),
		grpc.ChainStreamInterceptor(ic.Stream()),
	)
	shopv1.RegisterShopServer(srv, shopServer{shop: s})
	// grpc.health.v1 follows Redis reachability: NOT_SERVING while Redis
	// is down, so a load balancer stops sending calls that would fail.
	hs, err := interceptor.NewHealthServer(s.lk)
	if err != nil {
		return nil, err
	}
	healthpb.RegisterHealthServer(srv, hs)
	reflection.Register(srv) // lets grpcurl list and call the methods
	return srv, nil
}

// shopServer implements shopv1.ShopServer on the shop.
type shopServer struct {
	shopv1.UnimplementedShopServer
	shop *shop
}

// Buy runs under the lock "item:{req.sku}" taken by the interceptor; the
// shop's own nested Obtain re-enters it (Holds 2 in the response).
func (g shopServer) Buy(ctx context.Context, req *shopv1.BuyRequest) (*shopv1.BuyResponse, error) {
	o, err := g.shop.Buy(ctx, req.GetSku(), req.GetUser())
	if err != nil {
		return nil, grpcError(err)
	}
	return &shopv1.BuyResponse{
		OrderId:   o.ID,
		StockLeft: o.StockLeft,
		Fence:     o.Fence,
		Holds:     int32(o.Holds),
	}, nil
}

// GetItem returns an item's stock. It has no lock option.
func (g shopServer) GetItem(_ context.Context, req *shopv1.GetItemRequest) (*shopv1.Item, error) {
	it, err := g.shop.db.Get(req.GetSku())
	if err != nil {
		return nil, grpcError(err)
	}
	return &shopv1.Item{Sku: it.SKU, Stock: it.Stock, Sold: it.Sold}, nil
}

// grpcError maps the shop's errors to statuses. Lock refusals are mapped by
// the interceptor before the handler runs; a lock lost while it ran is
// turned into Aborted by the interceptor from whatever is returned here.
func grpcError(err error) error {
	switch {
	case errors.Is(err, errUnknownItem):
		return status.Error(codes.NotFound, "unknown item")
	case errors.Is(err, errSoldOut):
		return status.Error(codes.FailedPrecondition, "sold out")
	case errors.Is(err, locker.ErrStaleToken), errors.Is(err, locker.ErrLockLost):
		return status.Error(codes.Aborted, "lock lost; the write was rejected, retry")
	case errors.Is(err, locker.ErrNotObtained):
		return status.Error(codes.Aborted, "item busy, retry")
	case errors.Is(err, locker.ErrUnavailable):
		return status.Error(codes.Unavailable, "lock service unavailable")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.FromContextError(err).Err()
	}
	return status.Error(codes.Internal, "internal error")
}
