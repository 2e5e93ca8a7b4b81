package interceptor

import (
	"context"
	"errors"
	"fmt"

	"github.com/locktag/locktag/locker"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Idempotency guards unary methods with client idempotency keys: each
// (method, caller scope, key) runs the handler at most once, and retries
// get the stored outcome. It is immutable and safe for concurrent use.
type Idempotency struct {
	l       *locker.Locker
	o       *idemOptions
	methods map[string]protoreflect.MessageType // full method -> response type
}

// NewIdempotency builds a guard for the unary methods named (full method
// names such as "/shop.v1.Payments/Charge"). Each must be in the
// descriptor registry and unary, and its response type must be known. A
// scope is required: WithScope, or WithPublicScope. Errors wrap
// ErrUnknownMethod, ErrBadOption or are ErrNoScope; New never touches Redis.
func NewIdempotency(l *locker.Locker, methods []string, opts ...IdempotencyOption) (*Idempotency, error) {
	if l == nil {
		return nil, errors.New("interceptor: NewIdempotency: nil locker")
	}
	o := evaluateIdemOptions(opts)
	errs := o.errs
	g := &Idempotency{l: l, o: o, methods: make(map[string]protoreflect.MessageType, len(methods))}
	for _, m := range methods {
		md, err := findMethod(o.files, m)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if isStreaming(md) {
			errs = append(errs, fmt.Errorf("%w: %s is a streaming method; only unary methods can be idempotent", ErrUnknownMethod, m))
			continue
		}
		out := md.Output()
		mt, err := o.types.FindMessageByName(out.FullName())
		if err != nil {
			mt = dynamicpb.NewMessageType(out)
		}
		g.methods[m] = mt
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return g, nil
}

// IdempotencyUnaryServerInterceptor is NewIdempotency(...).Unary(); it
// panics with NewIdempotency's error.
func IdempotencyUnaryServerInterceptor(l *locker.Locker, methods []string, opts ...IdempotencyOption) grpc.UnaryServerInterceptor {
	g, err := NewIdempotency(l, methods, opts...)
	if err != nil {
		panic(err)
	}
	return g.Unary()
}

// Unary returns the unary server interceptor. Calls to other methods go
// straight to the handler. For a guarded method, before Redis is touched:
// the idempotency-key metadata is required (codes.InvalidArgument; see
// WithOptionalKey) and must be one value, a Structured Field string or bare
// printable ASCII of at most 255 bytes (codes.InvalidArgument); the scope
// is resolved (codes.Unauthenticated). The fingerprint is the full method
// and the deterministic marshalling of the request.
//
// Then: a new key runs the handler with a context that is cancelled with
// cause locker.ErrLockLost if the in-flight marker is lost, and stores its
// outcome (the response, or the status with its details); a retry gets
// that outcome again, with "idempotent-replayed: true" in the header and
// trailer metadata, without running the handler; a retry while the first
// call runs fails with codes.Aborted (or waits, WithReplayWait); a reuse of
// the key with a different request fails with codes.FailedPrecondition;
// Redis down fails with codes.Unavailable. A panicking handler frees the
// key (the panic goes on). Header and trailer metadata the handler sets are
// not stored. Put it before a lock interceptor; a lock refusal (its
// default ErrorInfo reasons LOCK_BUSY, LOCK_UNAVAILABLE) is not stored.
func (g *Idempotency) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		mt := g.methods[info.FullMethod]
		if mt == nil {
			return handler(ctx, req)
		}
		md, _ := metadata.FromIncomingContext(ctx)
		vals := md.Get(IdempotencyKeyMetadata)
		if len(vals) == 0 {
			if g.o.optional {
				return handler(ctx, req)
			}
			return nil, g.fail(ctx, ErrIdempotencyKeyMissing)
		}
		if len(vals) > 1 {
			return nil, g.fail(ctx, fmt.Errorf("%w: more than one value", locker.ErrBadIdempotencyKey))
		}
		key, err := locker.ParseIdempotencyKey(vals[0], g.o.maxKeyLen)
		if err != nil {
			return nil, g.fail(ctx, err)
		}
		scope := ""
		if !g.o.public {
			scope, err = g.o.scope(ctx)
			if err != nil || scope == "" {
				return nil, g.fail(ctx, errors.Join(ErrScopeUnresolved, err))
			}
		}
		msg, ok := req.(proto.Message)
		if !ok {
			return nil, status.Errorf(codes.Internal, "idempotency: request is not a proto message")
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "idempotency: cannot marshal the request")
		}
		name := locker.IdempotencyName(info.FullMethod, scope, key)
		params := g.o.params
		params.Name = info.FullMethod // low cardinality, for spans and metrics
		claim, err := g.l.Idempotent(ctx, name, info.FullMethod+"\x00"+string(b), params)
		if err != nil {
			return nil, g.fail(ctx, err)
		}
		if out, ok := claim.Replay(); ok {
			return g.replay(ctx, mt, out)
		}
		return g.execute(ctx, claim, req, handler)
	}
}

// replay answers with a stored outcome.
func (g *Idempotency) replay(ctx context.Context, mt protoreflect.MessageType, out []byte) (any, error) {
	o, err := decodeOutcome(out)
	if err != nil {
		return nil, status.Error(codes.Internal, "idempotency: unreadable stored outcome")
	}
	if o.notStored {
		return nil, g.fail(ctx, &notStoredError{code: o.code})
	}
	marker := metadata.Pairs(ReplayedMetadata, "true")
	_ = grpc.SetHeader(ctx, marker)
	_ = grpc.SetTrailer(ctx, marker)
	if o.status != nil {
		return nil, status.ErrorProto(o.status)
	}
	resp := mt.New().Interface()
	if err := proto.Unmarshal(o.response, resp); err != nil {
		return nil, status.Error(codes.Internal, "idempotency: unreadable stored response")
	}
	return resp, nil
}

// execute runs the handler holding claim, then stores or frees the key.
func (g *Idempotency) execute(ctx context.Context, claim *locker.Claim, req any, handler grpc.UnaryHandler) (any, error) {
	bg := context.WithoutCancel(ctx)
	finished := false
	defer func() {
		if !finished { // the handler panicked: free the key, let the panic go on
			_ = claim.Abandon(bg)
		}
	}()
	resp, herr := handler(claim.Context(), req)
	finished = true
	if herr == nil && noResponse(resp) {
		_ = claim.Abandon(bg) // nothing to store; gRPC fails the call
		return resp, herr
	}
	if herr != nil && (ctx.Err() != nil || lockRefused(herr) ||
		(g.o.serverErrors == ReleaseServerErrors && serverError(status.Code(herr)))) {
		_ = claim.Abandon(bg)
		if claim.Lost() {
			return nil, g.fail(ctx, errors.Join(locker.ErrLockLost, herr))
		}
		return resp, herr
	}
	out, err := encodeOutcome(resp, herr)
	switch {
	case err != nil:
		_ = claim.Abandon(bg)
	case len(out) > g.o.maxRespBytes && g.o.oversize == OversizeReleaseKey:
		_ = claim.Abandon(bg)
	case len(out) > g.o.maxRespBytes:
		_ = claim.Complete(bg, notStoredOutcome(status.Code(herr)))
	default:
		// A failure here leaves the key in flight until its lease ends; the
		// client has its answer, a later retry may run the handler again.
		_ = claim.Complete(bg, out)
	}
	return resp, herr
}

// fail asks the error handler for the client's error.
func (g *Idempotency) fail(ctx context.Context, err error) error {
	if out := g.o.errorHandler(ctx, err); out != nil {
		return out
	}
	return DefaultIdempotencyErrorHandler(ctx, err)
}
