package connectrpc

import (
	"context"
	"errors"

	"connectrpc.com/connect"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/locktag/locktag/interceptor/connectrpc/internal/rpccore"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
)

// Headers of the idempotency guard.
const (
	// IdempotencyKeyHeader is the request header carrying the key.
	IdempotencyKeyHeader = "Idempotency-Key"
	// ReplayedHeader is "true" on every replayed call's response headers.
	ReplayedHeader = "Idempotent-Replayed"
)

// Idempotency is a connect.Interceptor guarding unary procedures with
// client idempotency keys, with the gRPC adapter's semantics and record
// format. It is immutable and safe for concurrent use.
type Idempotency struct {
	g       *guard.Idempotency[context.Context]
	s       *settings
	methods map[string]protoreflect.MessageType // procedure -> response type
}

var _ connect.Interceptor = (*Idempotency)(nil)

// NewIdempotency builds the guard for the unary procedures named. A scope
// is required: guard.WithScope with a func(context.Context) (string,
// error) — connect.CallInfoForHandlerContext gives the headers — or
// guard.WithPublicScope. Errors wrap ErrUnknownMethod or
// locker.ErrBadOption, or are guard.ErrNoScope or guard.ErrNilLocker.
func NewIdempotency(l *locker.Locker, procedures []string, opts ...Option) (*Idempotency, error) {
	ig, err := rpccore.NewIdem[*Call](adapterName, l, procedures, opts, ErrorHandler(DefaultErrorHandler))
	if err != nil {
		return nil, err
	}
	return &Idempotency{g: ig.G, s: ig.S, methods: ig.Methods}, nil
}

// MustIdempotency is NewIdempotency, panicking with its error.
func MustIdempotency(l *locker.Locker, procedures []string, opts ...Option) *Idempotency {
	ig, err := NewIdempotency(l, procedures, opts...)
	if err != nil {
		panic(err)
	}
	return ig
}

// WrapUnary guards handler-side calls to the procedures: one execution per
// (procedure, scope, Idempotency-Key); retries get the stored response or
// error with "Idempotent-Replayed: true"; in flight: CodeAborted; another
// request with the key: CodeFailedPrecondition; a missing or bad key:
// CodeInvalidArgument; Redis down: CodeUnavailable. The fingerprint is the
// procedure and the deterministic marshalling of the request. Response
// headers the handler sets are not stored.
func (ig *Idempotency) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		proc := req.Spec().Procedure
		mt := ig.methods[proc]
		msg, ok := req.Any().(proto.Message)
		if mt == nil || !ok || req.Spec().IsClient {
			return next(ctx, req)
		}
		q := guard.Request{
			Route: proc,
			Keys:  req.Header().Values(IdempotencyKeyHeader),
			Parts: []string{proc},
			Body:  func(int64) ([]byte, error) { return proto.MarshalOptions{Deterministic: true}.Marshal(msg) },
		}
		var resp connect.AnyResponse
		var herr error
		o := ig.g.Run(ctx, ctx, q, func(ctx context.Context) guard.Answer {
			resp, herr = next(ctx, req)
			if herr != nil {
				return rpccore.Answer(nil, statusOf(herr))
			}
			m, _ := resp.Any().(proto.Message)
			return rpccore.Answer(m, nil)
		})
		switch o.Kind {
		case guard.OK:
			return resp, herr
		case guard.Replay:
			return replay(mt, o.Record)
		}
		return nil, fail(ig.s, ctx, proc, o)
	}
}

// WrapStreamingClient passes client streams through.
func (ig *Idempotency) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler passes streams through: only unary calls are guarded.
func (ig *Idempotency) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// statusOf is a handler's error as a google.rpc.Status, details included.
func statusOf(err error) *spb.Status {
	ce := new(connect.Error)
	if !errors.As(err, &ce) {
		ce = connect.NewError(connect.CodeUnknown, err)
	}
	st := &spb.Status{Code: int32(ce.Code()), Message: ce.Message()}
	for _, d := range ce.Details() {
		if v, err := d.Value(); err == nil {
			st.Details = append(st.Details, anyOf(v))
		}
	}
	return st
}

// replay answers with a stored outcome. The response is a dynamic message
// of the procedure's response type: connect sends any proto message.
func replay(mt protoreflect.MessageType, r *guard.Record) (connect.AnyResponse, error) {
	stored, st, err := rpccore.Decode(dynamicpb.NewMessageType(mt.Descriptor()), r)
	switch {
	case err != nil:
		return nil, connect.NewError(connect.CodeInternal, err)
	case st != nil:
		ce := newError(connect.Code(st.GetCode()), st.GetMessage(), nil)
		for _, a := range st.GetDetails() {
			if ed, err := connect.NewErrorDetail(a); err == nil {
				ce.AddDetail(ed)
			}
		}
		ce.Meta().Set(ReplayedHeader, "true")
		return nil, ce
	}
	resp := connect.NewResponse(stored.(*dynamicpb.Message))
	resp.Header().Set(ReplayedHeader, "true")
	return resp, nil
}

func anyOf(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		return &anypb.Any{}
	}
	return a
}
