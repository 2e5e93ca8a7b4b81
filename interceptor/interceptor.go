package interceptor

import (
	"context"
	"errors"

	"github.com/locktag/locktag/interceptor/internal/rpccore"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/guard"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Interceptor holds compiled rules. It is immutable and safe for concurrent
// use; Unary and Stream share its rules, so build one and install both.
type Interceptor struct {
	s      *settings
	unary  map[string]*guard.Lock[*Call]
	stream map[string]*guard.Lock[*Call]
}

// New compiles rules, and the (locktag.v1.lock) proto options of registered
// methods unless WithProtoOptions(false), into lock guards for locks taken
// with l. opts are guard options (guard.WithFailOpen, guard.WithRetryAfter,
// ...) and this package's. New checks everything a request is not needed
// for (tags, method names against the registry, {req...} fields against the
// request message, no {req...} on streams) and never touches Redis. The
// error is guard.ErrNilLocker, errors wrapping locker.ErrBadOption, or
// *RuleError values joined (errors.As finds the first):
// docs/grpc.md#checked-at-construction.
func New(l *locker.Locker, rules Rules, opts ...Option) (*Interceptor, error) {
	ls, err := rpccore.NewLocks(adapterName, l, rules, opts, ErrorHandler(DefaultErrorHandler), sourcesFor)
	if err != nil {
		return nil, err
	}
	return &Interceptor{s: ls.S, unary: ls.Unary, stream: ls.Stream}, nil
}

// UnaryServerInterceptor returns a unary server interceptor that takes each
// rule's lock before the handler and releases it after; see New for the
// rules and Interceptor.Unary for the behaviour. It panics with New's error
// if a rule is wrong, so install it where the server is built.
func UnaryServerInterceptor(l *locker.Locker, rules Rules, opts ...Option) grpc.UnaryServerInterceptor {
	return mustNew(l, rules, opts).Unary()
}

// StreamServerInterceptor returns a stream server interceptor that holds
// each rule's lock for the life of the stream; see New for the rules and
// Interceptor.Stream for the behaviour. It panics with New's error if a rule
// is wrong.
func StreamServerInterceptor(l *locker.Locker, rules Rules, opts ...Option) grpc.StreamServerInterceptor {
	return mustNew(l, rules, opts).Stream()
}

func mustNew(l *locker.Locker, rules Rules, opts []Option) *Interceptor {
	ic, err := New(l, rules, opts...)
	if err != nil {
		panic(err)
	}
	return ic
}

// errNoResponse tells the guard that a unary handler gave no response.
var errNoResponse = errors.New("interceptor: no response")

// Unary returns the unary server interceptor. A method without a rule goes
// straight to its handler; otherwise the rule's key is evaluated, the lock
// obtained (waiting up to the rule's wait, never past the call's deadline)
// and the handler called with the lease's context, which is cancelled with
// cause locker.ErrLockLost if the lock is lost. The lock is released when the
// handler returns or panics. A lock not taken fails the call with the
// ErrorHandler's error (Code has the defaults); so does a lock lost while the
// handler ran, unless it returned a response. docs/grpc.md has the details.
func (ic *Interceptor) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		g := ic.unary[info.FullMethod]
		if g == nil {
			return handler(ctx, req)
		}
		msg, _ := req.(proto.Message)
		var resp any
		var herr error
		o := g.Run(ctx, &Call{Ctx: ctx, FullMethod: info.FullMethod, Request: msg}, info.FullMethod, func(ctx context.Context) error {
			resp, herr = handler(ctx, req)
			if herr == nil && noResponse(resp) {
				return errNoResponse
			}
			return herr
		})
		if o.Kind.Ran() {
			return resp, herr
		}
		return nil, fail(ic.s, ctx, info.FullMethod, o)
	}
}

// Stream returns the stream server interceptor. The lock is taken before the
// handler runs, from a key that can use md, method and application sources
// (not req: the handler has not read a message yet), and held until the
// handler returns, so for the stream's whole life. The handler's
// stream.Context() is the lease's context. Failures, loss and release are as
// for Unary: if the lock is lost and the handler returns an error, the
// stream ends with the ErrorHandler's error for guard.Lost (default Aborted).
func (ic *Interceptor) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		g := ic.stream[info.FullMethod]
		if g == nil {
			return handler(srv, ss)
		}
		ctx := ss.Context()
		var herr error
		o := g.Run(ctx, &Call{Ctx: ctx, FullMethod: info.FullMethod}, info.FullMethod, func(lctx context.Context) error {
			if lctx != ctx {
				ss = &lockedStream{ServerStream: ss, ctx: lctx}
			}
			herr = handler(srv, ss)
			return herr
		})
		if o.Kind.Ran() {
			return herr
		}
		return fail(ic.s, ctx, info.FullMethod, o)
	}
}

// fail asks the error handler for the client's error.
func fail(s *settings, ctx context.Context, fullMethod string, o guard.Outcome) error {
	if out := s.ErrorHandler(ctx, fullMethod, o); out != nil {
		return out
	}
	return DefaultErrorHandler(ctx, fullMethod, o)
}

// noResponse reports whether a unary handler returned no response: nil, or
// a nil message pointer (which generated handlers return as a non-nil any).
func noResponse(resp any) bool {
	if resp == nil {
		return true
	}
	m, ok := resp.(proto.Message)
	return ok && !m.ProtoReflect().IsValid()
}

// lockedStream is a ServerStream whose Context is the lease's.
type lockedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *lockedStream) Context() context.Context { return s.ctx }
