// Package connectrpc takes locktag's lock tags and idempotency guards onto
// connect-go handlers (connectrpc.com/connect): the same rules as package
// interceptor (Go Rules and the (locktag.v1.lock) proto method option,
// {req...} checked against the request descriptor when the interceptor is
// built), over HTTP headers instead of gRPC metadata, answered with
// connect codes. It is a sibling of package interceptor so that gRPC
// services do not build connect and connect services do not build grpc;
// both are thin layers on package locker/guard. docs/connect.md is the
// guide.
//
//	ic, err := connectrpc.New(lk, connectrpc.Rules{
//		"/shop.v1.Shop/Buy": `key:"item:{req.sku}" wait:"1s"`,
//	})
//	...
//	path, h := shopv1connect.NewShopHandler(svc, connect.WithInterceptors(ic))
//
// On the client side, NewIdempotentClient sends one Idempotency-Key per
// call and retries it with that key (docs/clients.md).
package connectrpc

import (
	"context"
	"errors"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/locktag/locktag/interceptor/connectrpc/internal/rpccore"
	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
)

// Rules maps procedures, "/shop.v1.Inventory/Reserve", to lock tags; a rule
// replaces the procedure's proto option, an empty tag removes it.
type Rules map[string]string

// Call is one request as key sources see it, before the handler runs.
type Call struct {
	Ctx       context.Context // the handler's context, with earlier interceptors' values
	Procedure string          // "/shop.v1.Inventory/Reserve"
	Request   proto.Message   // nil for a stream
	Header    http.Header     // the request headers
}

// Interceptor is a connect.Interceptor holding compiled rules: unary
// procedures and streams (held for the stream's life). It is immutable and
// safe for concurrent use.
type Interceptor struct {
	s             *settings
	unary, stream map[string]*guard.Lock[*Call]
}

var _ connect.Interceptor = (*Interceptor)(nil)

// New compiles rules, and the (locktag.v1.lock) options of registered
// methods unless WithProtoOptions(false), as interceptor.New does: every
// tag, procedure and {req...} field is checked here, and New never touches
// Redis. Sources: {req.a.b} (unary only), {header.X}, {method} (the
// procedure) and WithSource's. The error is guard.ErrNilLocker, errors
// wrapping locker.ErrBadOption, or *RuleError values joined.
func New(l *locker.Locker, rules Rules, opts ...Option) (*Interceptor, error) {
	ls, err := rpccore.NewLocks(adapterName, l, rules, opts, ErrorHandler(DefaultErrorHandler), sourcesFor)
	if err != nil {
		return nil, err
	}
	return &Interceptor{s: ls.S, unary: ls.Unary, stream: ls.Stream}, nil
}

// MustNew is New, panicking with its error; for rules written in code.
func MustNew(l *locker.Locker, rules Rules, opts ...Option) *Interceptor {
	ic, err := New(l, rules, opts...)
	if err != nil {
		panic(err)
	}
	return ic
}

// errNoResponse tells the guard that a unary handler gave no response.
var errNoResponse = errors.New("connectrpc: no response")

// WrapUnary guards handler-side unary calls with a rule: the handler runs
// with the lease's context (cancelled with cause locker.ErrLockLost if the
// lock is lost) and only while the lock is held; a refusal is the
// ErrorHandler's *connect.Error (see Code). A response the handler returned
// is sent even if the lock was lost meanwhile. Clients pass through.
func (ic *Interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		proc := req.Spec().Procedure
		g := ic.unary[proc]
		if g == nil || req.Spec().IsClient {
			return next(ctx, req)
		}
		msg, _ := req.Any().(proto.Message)
		var resp connect.AnyResponse
		var herr error
		o := g.Run(ctx, &Call{Ctx: ctx, Procedure: proc, Request: msg, Header: req.Header()}, proc, func(ctx context.Context) error {
			resp, herr = next(ctx, req)
			if herr == nil && resp == nil {
				return errNoResponse
			}
			return herr
		})
		if o.Kind.Ran() {
			return resp, herr
		}
		return nil, fail(ic.s, ctx, proc, o)
	}
}

// WrapStreamingClient passes client streams through.
func (ic *Interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler holds a stream's lock from before the handler runs
// until it returns; the key cannot use {req...}.
func (ic *Interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		proc := conn.Spec().Procedure
		g := ic.stream[proc]
		if g == nil {
			return next(ctx, conn)
		}
		var herr error
		o := g.Run(ctx, &Call{Ctx: ctx, Procedure: proc, Header: conn.RequestHeader()}, proc, func(ctx context.Context) error {
			herr = next(ctx, conn)
			return herr
		})
		if o.Kind.Ran() {
			return herr
		}
		return fail(ic.s, ctx, proc, o)
	}
}
