package main

import (
	"context"
	"errors"
	"net/http"

	"connectrpc.com/connect"

	"github.com/locktag/locktag/example-app/shopv1"
	"github.com/locktag/locktag/example-app/shopv1/shopv1connect"
	"github.com/locktag/locktag/interceptor/connectrpc"
	"github.com/locktag/locktag/locker"
)

// newConnectHandler returns the shop's Shop service for connect-go (the
// Connect, gRPC and gRPC-Web protocols), mounted on the HTTP port. Like
// the gRPC server, it takes Buy's lock rule from the proto option alone:
// the same "item:{req.sku}" lock, so a connect Buy and a gRPC or HTTP
// purchase of one item never run at once.
func newConnectHandler(s *shop) (string, http.Handler, error) {
	ic, err := connectrpc.New(s.lk, nil) // nil: no Go rules, only proto options
	if err != nil {
		return "", nil, err // a bad option fails here, at start-up
	}
	path, h := shopv1connect.NewShopHandler(connectShop{shop: s}, connect.WithInterceptors(ic))
	return path, h, nil
}

// connectShop implements shopv1connect.ShopHandler on the shop.
type connectShop struct{ shop *shop }

// Buy runs under the lock the interceptor took (Holds 2: the shop's nested
// Obtain re-enters it).
func (c connectShop) Buy(ctx context.Context, req *connect.Request[shopv1.BuyRequest]) (*connect.Response[shopv1.BuyResponse], error) {
	o, err := c.shop.Buy(ctx, req.Msg.GetSku(), req.Msg.GetUser())
	if err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&shopv1.BuyResponse{
		OrderId: o.ID, StockLeft: o.StockLeft, Fence: o.Fence, Holds: int32(o.Holds),
	}), nil
}

// GetItem returns an item's stock. It has no lock option.
func (c connectShop) GetItem(_ context.Context, req *connect.Request[shopv1.GetItemRequest]) (*connect.Response[shopv1.Item], error) {
	it, err := c.shop.db.Get(req.Msg.GetSku())
	if err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&shopv1.Item{Sku: it.SKU, Stock: it.Stock, Sold: it.Sold}), nil
}

// connectError is grpcError's mapping with connect's codes.
func connectError(err error) error {
	switch {
	case errors.Is(err, errUnknownItem):
		return connect.NewError(connect.CodeNotFound, errors.New("unknown item"))
	case errors.Is(err, errSoldOut):
		return connect.NewError(connect.CodeFailedPrecondition, errors.New("sold out"))
	case errors.Is(err, locker.ErrStaleToken), errors.Is(err, locker.ErrLockLost):
		return connect.NewError(connect.CodeAborted, errors.New("lock lost; the write was rejected, retry"))
	case errors.Is(err, locker.ErrNotObtained):
		return connect.NewError(connect.CodeAborted, errors.New("item busy, retry"))
	case errors.Is(err, locker.ErrUnavailable):
		return connect.NewError(connect.CodeUnavailable, errors.New("lock service unavailable"))
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	return connect.NewError(connect.CodeInternal, errors.New("internal error"))
}
