package interceptor

import (
	"context"

	"github.com/locktag/locktag/interceptor/internal/rpccore"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Metadata keys of the idempotency guard.
const (
	// IdempotencyKeyMetadata is the incoming metadata key carrying the key.
	IdempotencyKeyMetadata = "idempotency-key"
	// ReplayedMetadata is set to "true" in the header and trailer metadata
	// of every replayed call.
	ReplayedMetadata = "idempotent-replayed"
)

// Idempotency guards unary methods with client idempotency keys: each
// (method, caller scope, key) runs the handler at most once, and retries
// get the stored outcome. It is immutable and safe for concurrent use.
type Idempotency struct {
	g       *guard.Idempotency[context.Context]
	s       *settings
	methods map[string]protoreflect.MessageType // full method -> response type
}

// NewIdempotency builds a guard (a guard.Idempotency) for the unary
// methods named (full method names such as "/shop.v1.Payments/Charge").
// Each must be in the descriptor registry and unary. opts are guard
// options — a scope is required: guard.WithScope with a
// func(context.Context) (string, error), or guard.WithPublicScope — and
// this package's WithErrorHandler and WithRegistry. The request has no size
// cap unless guard.WithMaxRequestBytes sets one (gRPC's own receive cap
// applies). Errors wrap ErrUnknownMethod or locker.ErrBadOption, or are
// guard.ErrNoScope or guard.ErrNilLocker; NewIdempotency never touches
// Redis.
func NewIdempotency(l *locker.Locker, methods []string, opts ...Option) (*Idempotency, error) {
	ig, err := rpccore.NewIdem[*Call](adapterName, l, methods, opts, ErrorHandler(DefaultErrorHandler))
	if err != nil {
		return nil, err
	}
	return &Idempotency{g: ig.G, s: ig.S, methods: ig.Methods}, nil
}

// IdempotencyUnaryServerInterceptor is NewIdempotency(...).Unary(); it
// panics with NewIdempotency's error.
func IdempotencyUnaryServerInterceptor(l *locker.Locker, methods []string, opts ...Option) grpc.UnaryServerInterceptor {
	g, err := NewIdempotency(l, methods, opts...)
	if err != nil {
		panic(err)
	}
	return g.Unary()
}

// Unary returns the unary server interceptor. Calls to other methods go
// straight to the handler. A guarded method's first call with a key runs
// the handler and stores its outcome (the response, or the status with its
// details); retries get that outcome again with "idempotent-replayed: true"
// metadata, without running the handler. Put this interceptor before the
// lock interceptor. Codes and lifecycle: docs/grpc.md and
// docs/idempotency.md.
func (ig *Idempotency) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		mt := ig.methods[info.FullMethod]
		if mt == nil {
			return handler(ctx, req)
		}
		msg, ok := req.(proto.Message)
		if !ok {
			return nil, status.Error(codes.Internal, "idempotency: request is not a proto message")
		}
		md, _ := metadata.FromIncomingContext(ctx)
		q := guard.Request{
			Route: info.FullMethod,
			Keys:  md.Get(IdempotencyKeyMetadata),
			Parts: []string{info.FullMethod},
			Body:  func(int64) ([]byte, error) { return proto.MarshalOptions{Deterministic: true}.Marshal(msg) },
		}
		var resp any
		var herr error
		o := ig.g.Run(ctx, ctx, q, func(ctx context.Context) guard.Answer {
			resp, herr = handler(ctx, req)
			return answer(resp, herr)
		})
		switch o.Kind {
		case guard.OK:
			return resp, herr
		case guard.Replay:
			return replay(ctx, mt, o.Record)
		}
		return nil, fail(ig.s, ctx, info.FullMethod, o)
	}
}

// answer captures a handler's result for the guard.
func answer(resp any, herr error) guard.Answer {
	if herr != nil {
		return rpccore.Answer(nil, status.Convert(herr).Proto())
	}
	m, _ := resp.(proto.Message)
	return rpccore.Answer(m, nil)
}

// replay answers with a stored outcome.
func replay(ctx context.Context, mt protoreflect.MessageType, r *guard.Record) (any, error) {
	marker := metadata.Pairs(ReplayedMetadata, "true")
	_ = grpc.SetHeader(ctx, marker)
	_ = grpc.SetTrailer(ctx, marker)
	resp, st, err := rpccore.Decode(mt, r)
	switch {
	case err != nil:
		return nil, status.Error(codes.Internal, err.Error())
	case st != nil:
		return nil, status.ErrorProto(st)
	}
	return resp, nil
}
